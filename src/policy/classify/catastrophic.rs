//! The catastrophic list (DESIGN §5.1 step 4): commands the engine denies outright, whatever
//! the rules, grants or approvals say. Each check works on a program's name and its arguments
//! after wrappers are stripped, so `sudo`, `env`, `sh -c`, `$(..)` and the like do not hide
//! them, and every spelling of the flags counts (`-rf`, `-fr`, `-r -f`, `--recursive`, `-R`).

use foldhash::HashMap;
use std::path::{Path, PathBuf};

use super::paths::{Cwds, Jail, glob_match, is_glob};
use super::words::Word;

/// Top-level directories whose loss breaks the system or every user's data.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/usr",
    "/var",
    "/mnt",
    "/media",
    "/snap",
    "/Applications",
    "/Library",
    "/System",
    "/Users",
    "/Volumes",
    "/private",
];

/// Programs that have a catastrophic form; the fallback scan looks for these names.
pub(crate) fn has_catastrophic_form(name: &str) -> bool {
    matches!(
        name,
        "rm" | "chmod"
            | "chown"
            | "chgrp"
            | "dd"
            | "mke2fs"
            | "mkswap"
            | "wipefs"
            | "shutdown"
            | "reboot"
            | "halt"
            | "poweroff"
            | "init"
            | "telinit"
            | "systemctl"
            | "loginctl"
            | "kill"
            | "find"
    ) || name.starts_with("mkfs")
}

/// Shell variables given static values earlier in the command line, with every value seen.
pub(crate) type Vars = HashMap<String, Vec<String>>;

/// Why `name args` is catastrophic, if it is.
pub(crate) fn check(
    jail: &Jail,
    cwds: &Cwds,
    vars: &Vars,
    name: &str,
    args: &[Word],
) -> Option<String> {
    let env = Env { jail, cwds, vars };
    match name {
        "rm" => recursive_on_doomed(&env, name, args, 0),
        "chmod" | "chown" | "chgrp" => recursive_on_doomed(&env, name, args, 1),
        "dd" => args.iter().find_map(|a| {
            let target = a.text.strip_prefix("of=")?;
            let dev = target.strip_prefix("/dev/")?;
            if a.dynamic || !matches!(dev, "null" | "stdout" | "stderr" | "zero" | "full") {
                Some(format!("dd writes straight to the device {target}"))
            } else {
                None
            }
        }),
        "mke2fs" => Some(format!("{name} formats a disk, destroying what is on it")),
        n if n.starts_with("mkfs") => {
            Some(format!("{name} formats a disk, destroying what is on it"))
        }
        "mkswap" => args
            .iter()
            .find(|a| !a.is_option() && a.text.starts_with("/dev/"))
            .map(|a| format!("mkswap overwrites the device {}", a.text)),
        "wipefs" => args
            .iter()
            .any(|a| {
                a.text == "--all"
                    || a.text.starts_with("--offset")
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && (a.text.contains('a') || a.text.contains('o')))
            })
            .then(|| "wipefs erases filesystem signatures from a disk".to_owned()),
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            Some(format!("{name} turns off or restarts the machine"))
        }
        "init" | "telinit" => args
            .iter()
            .any(|a| a.text == "0" || a.text == "6")
            .then(|| format!("{name} 0/6 turns off or restarts the machine")),
        "systemctl" | "loginctl" => args
            .iter()
            .find(|a| {
                matches!(
                    a.text.as_str(),
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "soft-reboot"
                        | "emergency"
                        | "rescue"
                )
            })
            .map(|a| format!("{name} {} turns off or restarts the machine", a.text)),
        "kill" => kill_all(args),
        "find" => find_delete(&env, args),
        _ => None,
    }
}

/// `rm -r`, `chmod -R`... on `/`, a system directory, the home directory, an ancestor of the
/// sandbox root, or `$VAR/` (which is `/` when the variable is empty). `skip` positional
/// arguments come before the targets (the mode of `chmod`, the owner of `chown`).
struct Env<'a> {
    jail: &'a Jail,
    cwds: &'a Cwds,
    vars: &'a Vars,
}

fn recursive_on_doomed(env: &Env, name: &str, args: &[Word], skip: usize) -> Option<String> {
    let mut recursive = false;
    let mut targets: Vec<&Word> = Vec::new();
    let mut reference = false;
    let mut ended = false;
    for a in args {
        let t = a.text.as_str();
        if ended || !a.is_option() {
            targets.push(a);
            continue;
        }
        if t == "--" {
            ended = true;
        } else if let Some(long) = t.strip_prefix("--") {
            if long == "recursive" || (long.len() >= 3 && "recursive".starts_with(long)) {
                recursive = true;
            }
            if long.starts_with("reference") {
                reference = true;
            }
        } else if name == "rm" {
            recursive |= t.contains('r') || t.contains('R');
        } else if t[1..].chars().all(|c| c.is_ascii_alphabetic()) {
            // chmod accepts modes like `-w`; only `R` means recursive.
            recursive |= t.contains('R');
        } else {
            targets.push(a);
        }
    }
    if !recursive {
        return None;
    }
    let skip = if reference { 0 } else { skip };
    targets.iter().skip(skip).find_map(|t| {
        let flag = if name == "rm" { "-r" } else { "-R" };
        doomed(env, t).map(|why| format!("{name} {flag} {}: {why}", t.text))
    })
}

/// `kill -9 -1` and friends signal every process the user can reach.
fn kill_all(args: &[Word]) -> Option<String> {
    let mut i = 0;
    if let Some(first) = args.first() {
        match first.text.as_str() {
            "--" => i = 1,
            "-s" | "-n" => i = 2,
            "-l" | "-L" => return None,
            // The first option is the signal, unless nothing follows it (`kill -1`).
            t if t.starts_with('-') && args.len() > 1 => i = 1,
            _ => {}
        }
    }
    if args.get(i).is_some_and(|a| a.text == "--") {
        i += 1;
    }
    args.get(i..)?
        .iter()
        .any(|a| a.text == "-1")
        .then(|| "kill -1 signals every process you can reach".to_owned())
}

/// `find / -delete` is `rm -rf /` by another name.
fn find_delete(env: &Env, args: &[Word]) -> Option<String> {
    let deletes = args.windows(2).any(|w| {
        matches!(w[0].text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
            && matches!(
                w[1].text.rsplit('/').next().unwrap_or(""),
                "rm" | "shred" | "unlink" | "rmdir"
            )
    }) || args.iter().any(|a| a.text == "-delete");
    if !deletes {
        return None;
    }
    args.iter()
        .skip_while(|a| matches!(a.text.as_str(), "-H" | "-L" | "-P") || a.text.starts_with("-O"))
        .take_while(|a| !a.text.starts_with('-') && !matches!(a.text.as_str(), "(" | "!" | ")"))
        .find_map(|t| doomed(env, t).map(|why| format!("find {} -delete: {why}", t.text)))
}

/// Why deleting (or recursively changing) `w` would be a disaster, if it would.
fn doomed(env: &Env, w: &Word) -> Option<String> {
    let (jail, cwds) = (env.jail, env.cwds);
    let t = w.text.as_str();
    if let Some((name, rest)) = w.after_lead_var() {
        // A variable given a value earlier is judged through that value (see `substituted`).
        if name != "HOME" && env.vars.contains_key(name) {
            return None;
        }
        if name != "HOME" {
            let root_like = rest.trim_start_matches('/');
            if rest.starts_with('/') && (root_like.is_empty() || is_match_all(root_like)) {
                return Some(format!("`{t}` is `/` when ${name} is empty or unset"));
            }
            return None;
        }
        return match &jail.home {
            Some(_) => doomed_static(jail, cwds, w, true),
            None => home_only(rest).then(|| "that is your home directory".to_owned()),
        };
    }
    if w.dynamic {
        return None;
    }
    if let Some(after) = t.strip_prefix('~') {
        let (user, rest) = after.split_once('/').map_or((after, ""), |(u, r)| (u, r));
        if user == "+" || user == "-" {
            return None;
        }
        if !user.is_empty() {
            return home_only(&format!("/{rest}"))
                .then(|| format!("`~{user}` is a home directory"));
        }
        if jail.home.is_none() {
            return home_only(&format!("/{rest}"))
                .then(|| "that is your home directory".to_owned());
        }
    }
    doomed_static(jail, cwds, w, false)
}

/// `rest` (after a home prefix) leaves the whole home directory selected: ``, `/`, `/*`, `/.`.
fn home_only(rest: &str) -> bool {
    let r = rest.trim_matches('/');
    r.is_empty() || r == "." || is_match_all(r)
}

/// A final component that selects everything in its directory.
fn is_match_all(c: &str) -> bool {
    is_glob(c) && ["a", ".a", "..a", "a.b"].iter().all(|n| glob_match(c, n))
        || matches!(c, "*" | ".*" | "**" | "?*" | ".??*" | ".[!.]*" | ".[^.]*")
}

fn doomed_static(jail: &Jail, cwds: &Cwds, w: &Word, _home_var: bool) -> Option<String> {
    let cands = jail.candidates(w, cwds)?;
    for (norm, _) in cands {
        let (dir, all) = match norm.file_name().map(|f| f.to_string_lossy()) {
            Some(last) if w.glob && is_match_all(&last) => (
                norm.parent().map(Path::to_path_buf).unwrap_or_default(),
                true,
            ),
            _ => (norm.clone(), false),
        };
        if let Some(why) = doomed_dir(jail, &dir, all) {
            return Some(why);
        }
        // A symlink inside the root can point at home or `/`.
        if let Some(real) = Jail::real(&dir) {
            if real != dir {
                if let Some(why) = doomed_dir(jail, &real, all) {
                    return Some(format!("{why} (through the symlink {})", dir.display()));
                }
            }
        }
    }
    None
}

fn doomed_dir(jail: &Jail, dir: &Path, all: bool) -> Option<String> {
    let every = if all { "everything in " } else { "" };
    if dir == Path::new("/") {
        return Some(format!("that is {every}/ (the whole filesystem)"));
    }
    if SYSTEM_DIRS.iter().any(|s| dir == Path::new(s)) {
        return Some(format!(
            "that is {every}{}, a system directory",
            dir.display()
        ));
    }
    if let Some(h) = &jail.home {
        if dir == h.as_path() {
            return Some(format!("that is {every}your home directory"));
        }
        if h.starts_with(dir) {
            return Some(format!("{} holds your home directory", dir.display()));
        }
    }
    let roots: [Option<&PathBuf>; 2] = [Some(&jail.root), jail.root_real.as_ref()];
    for r in roots.into_iter().flatten() {
        if r.starts_with(dir) && r.as_path() != dir {
            return Some(format!("{} holds the sandbox root", dir.display()));
        }
    }
    None
}
