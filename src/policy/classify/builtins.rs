//! The rules for shell builtins that change how the rest of a line runs: options that make
//! later words mean something else (`set -o posix`, `shopt -s expand_aliases`), text run as a
//! command (`eval`, `source`, `trap`, `alias`, `read -C`, `jobs -x`) and variables set from
//! input (`read`, `printf -v`). Each text that will run is judged as a script of its own.

use crate::protocol::Risk::{Dangerous, Moderate};

use super::programs::{join_words, opt_is, parse_args};
use super::tables::sensitive_var;
use super::words::Word;
use super::{Acc, Analyzer, Io};

impl Analyzer {
    /// Judges `name` if it is one of these builtins; `false` for any other program.
    pub(super) fn builtin(
        &mut self,
        acc: &mut Acc,
        name: &str,
        args: &[Word],
        io: &Io,
        depth: u32,
    ) -> bool {
        match name {
            "printf" => {
                let p = parse_args(args, "v", &[]);
                for (n, v) in &p.opts {
                    if let (true, Some(v)) = (n == "-v", v) {
                        if let Some(why) = sensitive_var(&v.text, "") {
                            acc.raise(Moderate, format!("sets {}, {why}", v.text));
                        }
                    }
                }
            }
            "set" => {
                if args.is_empty() {
                    acc.raise(
                        Moderate,
                        "set without arguments prints every variable, which may hold secrets",
                    );
                }
                // Options that keep the meaning of what follows; anything else (`-k` makes
                // assignments anywhere in a command line count, `-T` and `-o` modes…) is not
                // modelled.
                let mut rest = args.iter();
                while let Some(a) = rest.next() {
                    let t = a.text.as_str();
                    if a.dynamic {
                        acc.raise(Moderate, "set with an option only known at run time");
                    } else if t == "--" || t == "-" {
                        break;
                    } else if t == "-o" || t == "+o" {
                        match rest.next().map(|v| v.text.as_str()) {
                            Some("pipefail" | "errexit" | "nounset" | "xtrace" | "noglob")
                            | None => {}
                            Some("posix") => acc.raise(
                                Dangerous,
                                "set -o posix turns on aliases, which can make any name run anything",
                            ),
                            Some(other) => {
                                acc.raise(Moderate, format!("set -o {other} is not modelled"))
                            }
                        }
                    } else if let Some(flags) = t.strip_prefix(['-', '+']) {
                        if !flags.chars().all(|c| "euxfvCnbhBH".contains(c)) {
                            acc.raise(Moderate, format!("set {t} is not modelled"));
                        }
                    } else {
                        break; // positional parameters
                    }
                }
            }
            "read" | "mapfile" | "readarray" => {
                // Which options take a value differs: `read -t 5`, but `mapfile -t` is a flag.
                let spec = if name == "read" {
                    "adinNptu"
                } else {
                    "dnOsuCc"
                };
                let p = parse_args(args, spec, &[]);
                for (n, v) in &p.opts {
                    if opt_is(n, "-C") {
                        acc.raise(Moderate, format!("{name} -C runs a callback command"));
                        match v {
                            Some(cb) if !cb.dynamic => {
                                let cb = cb.text.clone();
                                self.script(&cb, depth + 1);
                            }
                            _ => acc.raise(
                                Dangerous,
                                format!("{name} -C runs a callback only known at run time"),
                            ),
                        }
                    }
                }
                for w in &p.pos {
                    if let Some(why) = sensitive_var(&w.text, "") {
                        acc.raise(Moderate, format!("sets {}, {why}", w.text));
                    }
                }
            }
            "jobs" => {
                // `jobs -x cmd args` runs cmd with job specs replaced.
                if let Some(i) = args
                    .iter()
                    .position(|a| a.dynamic || (a.is_option() && a.text.contains('x')))
                {
                    acc.raise(Moderate, "jobs -x runs its arguments as a command");
                    self.nested(args[i + 1..].to_vec(), depth);
                }
            }
            "shopt" => {
                // `-s`, `-u`, `-o` alone or in a cluster (`-qs`, `-pqs`).
                let changes = args.iter().any(|a| {
                    a.dynamic
                        || (a.is_option()
                            && !a.text.starts_with("--")
                            && a.text[1..].contains(['s', 'u', 'o']))
                });
                if changes {
                    for a in args.iter().filter(|a| !a.is_option()) {
                        match a.text.as_str() {
                            // These change no command's meaning. Options that make globs
                            // match more (`nocaseglob`, `dotglob`, `globstar`...) are not
                            // here: the classifier's own matcher would then miss names bash
                            // expands to, a symlink out of the root among them.
                            "nullglob" | "failglob" | "extglob" | "pipefail" | "errexit"
                            | "nounset" => {}
                            "expand_aliases" => acc.raise(
                                Dangerous,
                                "shopt -s expand_aliases lets an alias make any name run anything",
                            ),
                            "cdable_vars" => acc.raise(
                                Dangerous,
                                "shopt cdable_vars lets cd go to any variable's folder, behind \
                                 what ground-link can follow",
                            ),
                            other => acc.raise(
                                Moderate,
                                format!(
                                    "shopt {other} changes how the shell runs what follows \
                                     (cdable_vars lets cd leave for any variable's folder)"
                                ),
                            ),
                        }
                    }
                }
            }
            "hash" | "enable" => {
                if !args.is_empty() {
                    acc.raise(
                        Moderate,
                        format!("{name} with arguments changes which program a name runs"),
                    );
                }
            }
            "eval" => {
                acc.raise(Moderate, "eval runs its arguments as a shell command");
                if args.iter().any(|a| a.dynamic) {
                    acc.raise(Dangerous, "eval runs a command built at run time");
                }
                let script = join_words(args);
                self.script(&script, depth + 1);
            }
            "source" | "." => {
                acc.raise(Moderate, format!("{name} runs the commands in a file"));
                let Some(f) = args.first() else { return true };
                if matches!(
                    f.text.as_str(),
                    "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-"
                ) {
                    self.stdin_script(acc, name, io, depth);
                } else {
                    self.read_path(acc, f);
                }
            }
            "trap" => {
                // `trap -- CMD SIG`: the action follows the end of options.
                let (args, ended) = match args.first() {
                    Some(a) if a.text == "--" => (&args[1..], true),
                    _ => (args, false),
                };
                if let (Some(action), true) = (args.first(), args.len() >= 2) {
                    if (ended || !action.is_option()) && !action.text.is_empty() {
                        acc.raise(Moderate, "trap runs a command later, when a signal arrives");
                        let a = action.text.clone();
                        self.script(&a, depth + 1);
                    }
                }
            }
            "alias" => {
                for a in args {
                    if let Some((_, value)) = a.text.split_once('=') {
                        // Wherever aliases expand (POSIX mode, `sh`, expand_aliases), a later
                        // name runs this text, and the two are never judged together.
                        acc.raise(
                            Dangerous,
                            "alias changes what a command name runs later in the line",
                        );
                        let v = value.to_owned();
                        self.script(&v, depth + 1);
                    }
                }
            }
            _ => return false,
        }
        true
    }
}
