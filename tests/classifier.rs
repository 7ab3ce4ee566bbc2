//! Suite: classifier. The corpus in `tests/vectors/commands.tsv` is the main test: one line per
//! command with its expected risk and whether it is catastrophic. The other tests check the
//! shape of the analysis (parts, effective words, paths, writes) and that random input never
//! panics and is never called safe when it does not parse.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use ground_link::policy::classify::{ClassifyContext, CommandAnalysis, MAX_SAFE_LEN, classify};
use ground_link::protocol::Risk;
use proptest::prelude::*;

/// A home directory with the sandbox root inside it, laid out as the corpus header says.
struct Sandbox {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let (home, root) = corpus_layout(&base);
        Sandbox {
            _dir: dir,
            home,
            root,
        }
    }

    fn classify(&self, command: &str) -> CommandAnalysis {
        let ctx = ClassifyContext {
            root: &self.root,
            home: Some(&self.home),
        };
        classify(command, &ctx)
    }
}

/// The layout the corpus header describes, under `base`: returns (home, root).
pub fn corpus_layout(base: &std::path::Path) -> (PathBuf, PathBuf) {
    let home = base.join("home/user");
    let root = home.join("proj");
    for d in [
        root.join("src"),
        root.join("docs"),
        root.join(".git"),
        root.join("vendor/sub/.git"),
        home.join(".ssh"),
        home.join("docs"),
        home.join("proj2"),
    ] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(root.join("README.md"), "hello\n").unwrap();
    // A committed bare-style repository: git started in it would run its config.
    fs::create_dir_all(root.join("evil/objects")).unwrap();
    fs::write(root.join("evil/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(
        root.join("evil/config"),
        "[core]\n\tfsmonitor = touch pwned\n",
    )
    .unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(home.join(".ssh/id_rsa"), "secret\n").unwrap();
    fs::write(home.join("docs/notes.txt"), "notes\n").unwrap();
    fs::write(home.join("proj2/secret"), "secret\n").unwrap();
    symlink(root.join("src"), root.join("link_in")).unwrap();
    symlink(home.join("docs"), root.join("link_out")).unwrap();
    symlink(base.join("missing/file"), root.join("dangling")).unwrap();
    (home, root)
}

fn risk_name(r: Risk) -> &'static str {
    r.as_str()
}

#[test]
fn corpus() {
    let sb = Sandbox::new();
    let text = include_str!("vectors/commands.tsv");
    let mut failures = Vec::new();
    let mut cases = 0;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            cols.len() >= 3,
            "commands.tsv line {}: expected command, risk, catastrophic: {line:?}",
            n + 1
        );
        let command = cols[0]
            .replace('␤', "\n")
            .replace('␉', "\t")
            .replace("{root}", &sb.root.to_string_lossy())
            .replace("{home}", &sb.home.to_string_lossy());
        let want_risk = cols[1];
        let want_cat = match cols[2] {
            "yes" => true,
            "no" => false,
            other => panic!(
                "commands.tsv line {}: catastrophic must be yes or no, not {other:?}",
                n + 1
            ),
        };
        cases += 1;
        let got = sb.classify(&command);
        let got_risk = risk_name(got.risk);
        if got_risk != want_risk || got.catastrophic.is_some() != want_cat {
            failures.push(format!(
                "line {}: {command:?}\n    want {want_risk}{}, got {got_risk}{}\n    reasons: {:?}\n    parse error: {:?}\n    parts: {:?}",
                n + 1,
                if want_cat { " + catastrophic" } else { "" },
                got.catastrophic
                    .as_deref()
                    .map(|c| format!(" + catastrophic ({c})"))
                    .unwrap_or_default(),
                got.reasons,
                got.parse_error,
                got.parts.iter().map(|p| (&p.effective, p.risk)).collect::<Vec<_>>(),
            ));
        }
    }
    assert!(
        cases >= 130,
        "the corpus should have at least 130 cases, has {cases}"
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} corpus cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_simple_command_is_a_part() {
    let sb = Sandbox::new();
    let a = sb.classify("ls && echo $(id) | wc; bash -c 'pwd; whoami' > out.txt");
    let effective: Vec<Vec<String>> = a.parts.iter().map(|p| p.effective.clone()).collect();
    let want: Vec<Vec<&str>> = vec![
        vec!["ls"],
        vec!["echo", "$(id)"],
        vec!["id"],
        vec!["wc"],
        vec!["bash", "-c", "pwd; whoami"],
        vec!["pwd"],
        vec!["whoami"],
    ];
    assert_eq!(effective, want);
    let bash = &a.parts[4];
    assert_eq!(
        bash.writes,
        vec![sb.root.join("out.txt").to_string_lossy().into_owned()]
    );
    assert_eq!(bash.text, "bash -c 'pwd; whoami' > out.txt");
}

#[test]
fn wrappers_are_stripped_from_effective_words() {
    let sb = Sandbox::new();
    let cases: &[(&str, &[&str])] = &[
        ("env A=1 B=2 ls -la", &["ls", "-la"]),
        ("timeout -s KILL 5 nice -n 3 git status", &["git", "status"]),
        ("sudo -u bob -E make test", &["make", "test"]),
        ("nohup time command ls", &["ls"]),
        ("xargs -0 -n 1 grep foo", &["grep", "foo"]),
        ("FOO=1 ls", &["ls"]),
    ];
    for (cmd, want) in cases {
        let a = sb.classify(cmd);
        assert_eq!(a.parts[0].effective, *want, "{cmd}");
    }
    let a = sb.classify("FOO=1 ls");
    assert_eq!(a.parts[0].words, ["FOO=1", "ls"]);
}

#[test]
fn words_have_quotes_removed_and_expansions_kept() {
    let sb = Sandbox::new();
    let a = sb.classify(r#"grep -e 'a b' "c $X" $'\x41' \d"#);
    assert_eq!(a.parts[0].words, ["grep", "-e", "a b", "c $X", "A", "d"]);
}

#[test]
fn paths_are_resolved_and_reported() {
    let sb = Sandbox::new();
    let a = sb.classify("cat ~/.ssh/id_rsa src/main.rs > /dev/null");
    let p = &a.parts[0];
    assert_eq!(
        p.paths,
        vec![
            sb.home.join(".ssh/id_rsa").to_string_lossy().into_owned(),
            sb.root.join("src/main.rs").to_string_lossy().into_owned(),
        ]
    );
    assert!(
        p.writes.is_empty(),
        "/dev/null is not a write: {:?}",
        p.writes
    );
    assert!(
        a.reasons
            .iter()
            .any(|r| r.contains(".ssh/id_rsa") && r.contains("outside")),
        "reasons should name the secret: {:?}",
        a.reasons
    );
}

/// The programs judged from the tables (`changer_of`, `controller`): their own reason comes
/// first, option values that take a value never pass for files, and each operand that is a
/// file is a write.
#[test]
fn tabled_programs_judge_their_operands() {
    let sb = Sandbox::new();
    let inside = |p: &str| sb.root.join(p).to_string_lossy().into_owned();
    /// command, risk, first reason, paths read or written, writes
    type Case<'a> = (&'a str, Risk, &'a str, &'a [&'a str], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "touch -r README.md new.txt",
            Risk::Moderate,
            "touch creates or changes files",
            &["README.md", "new.txt"],
            &["new.txt"],
        ),
        (
            "mkdir -m 700 out",
            Risk::Moderate,
            "mkdir creates directories",
            &["out"],
            &["out"],
        ),
        (
            "mv -t docs a.txt b.txt",
            Risk::Moderate,
            "mv moves files",
            &["docs", "a.txt", "b.txt"],
            &["docs", "a.txt", "b.txt"],
        ),
        (
            "shred -n 3 f",
            Risk::Dangerous,
            "shred deletes files",
            &["f"],
            &["f"],
        ),
        (
            "unlink f",
            Risk::Dangerous,
            "unlink deletes files",
            &["f"],
            &["f"],
        ),
        (
            "truncate -s 0 f",
            Risk::Dangerous,
            "truncate destroys file contents",
            &["f"],
            &["f"],
        ),
        (
            "chmod 644 a.txt",
            Risk::Dangerous,
            "chmod changes permissions or ownership",
            &["a.txt"],
            &["a.txt"],
        ),
        (
            "chown --reference=README.md a.txt",
            Risk::Dangerous,
            "chown changes permissions or ownership",
            &["a.txt"],
            &["a.txt"],
        ),
        (
            "systemctl list-units",
            Risk::Moderate,
            "systemctl list-units reads the state of system services",
            &[],
            &[],
        ),
        (
            "systemctl is-active nginx",
            Risk::Moderate,
            "systemctl is-active reads",
            &[],
            &[],
        ),
        (
            "systemctl enable nginx",
            Risk::Dangerous,
            "systemctl controls system services",
            &[],
            &[],
        ),
        (
            "podman --remote ps",
            Risk::Moderate,
            "podman ps reads the state of containers",
            &[],
            &[],
        ),
        (
            "nerdctl exec c sh",
            Risk::Dangerous,
            "nerdctl controls containers",
            &[],
            &[],
        ),
    ];
    for (command, risk, why, paths, writes) in cases {
        let a = sb.classify(command);
        let p = &a.parts[0];
        assert_eq!(a.risk, *risk, "{command}: {:?}", a.reasons);
        assert!(a.reasons[0].starts_with(why), "{command}: {:?}", a.reasons);
        let want = |v: &[&str]| v.iter().map(|p| inside(p)).collect::<Vec<_>>();
        assert_eq!(p.paths, want(paths), "{command}: paths");
        assert_eq!(p.writes, want(writes), "{command}: writes");
    }
    // Only where it writes decides for tee.
    assert_eq!(sb.classify("tee out.txt").risk, Risk::Moderate);
    assert_eq!(sb.classify("tee ~/.bashrc").risk, Risk::Dangerous);
}

#[test]
fn a_relative_root_is_resolved_from_the_current_directory() {
    let cwd = std::env::current_dir().unwrap();
    let ctx = ClassifyContext {
        root: std::path::Path::new("."),
        home: None,
    };
    let a = classify("cat Cargo.toml", &ctx);
    assert_eq!(a.risk, Risk::Safe, "{a:?}");
    assert_eq!(
        a.parts[0].paths,
        vec![cwd.join("Cargo.toml").to_string_lossy().into_owned()]
    );
    assert_eq!(classify("cat ../x", &ctx).risk, Risk::Moderate);
}

#[test]
fn long_commands_are_never_safe() {
    let sb = Sandbox::new();
    let long = format!("echo {}", "a".repeat(MAX_SAFE_LEN));
    let a = sb.classify(&long);
    assert_eq!(a.risk, Risk::Moderate);
    assert!(a.parse_error.is_some());
    let short = sb.classify("echo aaaa");
    assert_eq!(short.risk, Risk::Safe);
}

#[test]
fn oversized_commands_are_refused() {
    let sb = Sandbox::new();
    let huge = "a".repeat(300 * 1024);
    let a = sb.classify(&huge);
    assert!(a.catastrophic.is_some());
    assert_eq!(a.risk, Risk::Dangerous);
}

#[test]
fn unknown_home_still_catches_home_deletion() {
    let sb = Sandbox::new();
    let ctx = ClassifyContext {
        root: &sb.root,
        home: None,
    };
    for cmd in ["rm -rf ~", "rm -rf $HOME", "rm -rf ~/"] {
        let a = classify(cmd, &ctx);
        assert!(a.catastrophic.is_some(), "{cmd}: {a:?}");
    }
    assert_eq!(classify("cat ~/notes", &ctx).risk, Risk::Moderate);
}

#[test]
fn deep_nesting_is_not_safe_and_does_not_overflow() {
    // On a small stack (async runtimes use 2 MiB worker threads), in a debug build.
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(deep_nesting_cases)
        .unwrap()
        .join()
        .unwrap();
}

fn deep_nesting_cases() {
    let sb = Sandbox::new();
    let deep = format!("{}ls{}", "$(".repeat(600), ")".repeat(600));
    let a = sb.classify(&deep);
    assert_ne!(a.risk, Risk::Safe);
    // brush-parser recurses per level: these are read on a stack of their own, or refused.
    for levels in [20, 300, 500, 5000] {
        for (open, close) in [
            ("if true; then ", "; fi"),
            ("case x in a) ", " ;; esac"),
            ("{ ", "; }"),
            ("( ", " )"),
            ("while true; do ", "; done"),
        ] {
            let cmd = format!("{}rm -rf ~{}", open.repeat(levels), close.repeat(levels));
            let a = sb.classify(&cmd);
            assert!(
                a.catastrophic.is_some(),
                "{levels} levels of {open:?}: {:?}",
                a.reasons
            );
        }
    }
    // `[[ a && a && … ]]` recurses once per operator in brush-parser (1,200 overflowed a
    // 2 MiB worker thread); a long `&&` chain is refused rather than read.
    for n in [300, 1500, 40_000] {
        let test = format!("[[ {} ]]; rm -rf ~", vec!["a"; n].join(" && "));
        let a = sb.classify(&test);
        assert!(a.catastrophic.is_some(), "{n} operators: {:?}", a.reasons);
    }
    let chain = vec!["ls"; 800].join(" && ");
    let a = sb.classify(&chain);
    assert_ne!(a.risk, Risk::Safe);
    let nested_sh = (0..12).fold("rm -rf /".to_owned(), |acc, _| {
        format!("sh -c '{}'", acc.replace('\'', r"'\''"))
    });
    let a = sb.classify(&nested_sh);
    assert!(
        a.catastrophic.is_some() || a.risk == Risk::Dangerous,
        "{a:?}"
    );
}

#[test]
fn options_missing_their_value_do_not_panic() {
    // Regression: `time -f` at the end of a command sliced past the end of the words.
    let sb = Sandbox::new();
    let programs = [
        "time", "timeout", "nice", "env", "xargs", "sudo", "su", "watch", "stdbuf", "ionice",
        "chroot", "exec", "grep", "rg", "sed", "find", "git", "git -C", "tar", "cp", "ln", "sort",
        "jq", "curl", "wget", "bash", "date", "read", "printf", "kill", "chmod",
    ];
    for p in programs {
        for opt in [
            "-f", "-o", "-s", "-u", "-C", "-S", "-e", "-I", "-t", "-n", "--file", "-c",
        ] {
            let cmd = format!("{p} {opt}");
            let a = sb.classify(&cmd);
            assert!(!a.parts.is_empty(), "{cmd}");
        }
    }
}

#[test]
fn non_ascii_input_does_not_crash_the_parser() {
    // Positions in the parser's reading count characters, not bytes; and tree-sitter-bash,
    // used before, crashed on `echo {` + U+10FFFF.
    let sb = Sandbox::new();
    for c in ['\u{10FFFF}', '\u{E0000}', '\u{F0000}', 'é', '😀'] {
        for shape in [
            "echo {C",
            "a {C}",
            "x{C",
            "cat C/C",
            "rm -rf ~C",
            "echo C; rm -rf /",
        ] {
            let cmd = shape.replace('C', &c.to_string());
            let a = sb.classify(&cmd);
            assert!(a.parts.iter().all(|p| !p.text.is_empty()), "{cmd:?}");
        }
    }
    let a = sb.classify("echo \u{10FFFF}; rm -rf /");
    assert!(a.catastrophic.is_some());
    let a = sb.classify("cat ré.txt");
    assert_eq!(a.parts[0].words, ["cat", "ré.txt"]);
    assert_eq!(a.risk, Risk::Safe);
}

#[test]
fn pathological_input_is_cut_off_not_parsed_for_minutes() {
    // tree-sitter's error recovery, used before, was quadratic on runs of `)`: 64 KiB took
    // minutes. Whatever reads commands must refuse such text quickly.
    let sb = Sandbox::new();
    let hostile = format!("rm -rf / {}", ")".repeat(64 * 1024));
    let started = std::time::Instant::now();
    let a = sb.classify(&hostile);
    let took = started.elapsed();
    assert_eq!(a.risk, Risk::Dangerous);
    assert!(a.parse_error.is_some());
    assert!(
        a.catastrophic.is_some(),
        "the fallback scan still sees rm -rf /"
    );
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
}

/// Whether bash itself refuses the text (`bash -n`): whatever the classifier's parser makes of
/// it, such text must never be called safe.
fn has_error(src: &str) -> bool {
    !crate::oracle::bash_accepts(src)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ground_link::testing::proptest_cases(512)))]

    #[test]
    fn random_input_never_panics_and_errors_are_not_safe(s in "\\PC{0,200}") {
        let sb = sandbox();
        let a = sb.classify(&s);
        if has_error(&s) {
            prop_assert_ne!(a.risk, Risk::Safe, "{:?} has parse errors but was safe", s);
        }
        if a.catastrophic.is_some() {
            prop_assert_eq!(a.risk, Risk::Dangerous);
        }
    }

    #[test]
    fn shell_like_input_never_panics(s in "[a-z ;|&$(){}<>'\"`\\\\~/.*=\\n-]{0,120}") {
        let sb = sandbox();
        let a = sb.classify(&s);
        if has_error(&s) {
            prop_assert_ne!(a.risk, Risk::Safe, "{:?} has parse errors but was safe", s);
        }
        for p in &a.parts {
            prop_assert!(p.risk <= a.risk);
        }
    }
}

/// One sandbox per test thread: building it for every proptest case would be slow.
fn sandbox() -> &'static Sandbox {
    thread_local! {
        static SB: &'static Sandbox = Box::leak(Box::new(Sandbox::new()));
    }
    SB.with(|s| *s)
}
