//! Suite: search (`glob` and `grep`, DESIGN §3), each test in its own temp dir.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ground_link::jail::Jail;
use ground_link::protocol::SandboxMode;
use ground_link::tools::search::{self, GlobArgs, GrepArgs, SearchOutput};
use serde_json::{Value, json};

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// A small project: sources, docs, an ignored build dir, a hidden dir, a binary file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        "src/main.rs",
        "fn main() {\n    println!(\"Hello\");\n}\n",
    );
    write(r, "src/lib.rs", "pub fn hello() {}\n// HELLO world\n");
    write(r, "src/deep/x.rs", "const X: u8 = 1;\n");
    write(r, "docs/a.md", "hello docs\n");
    write(r, "README.md", "Hello readme\n");
    write(r, "special.txt", "call a.b(c) here\naxb(c) no\n");
    write(r, ".gitignore", "target/\n*.log\n");
    write(r, "target/out.rs", "fn hello_built() {}\n");
    write(r, "app.log", "hello log\n");
    write(r, ".hidden/h.rs", "hello hidden\n");
    write(r, "bin.dat", b"hello\0binary hello\n");
    dir
}

fn jail(root: &Path) -> Jail {
    Jail::new(root, SandboxMode::WorkspaceWrite).unwrap()
}

fn grep_args(v: Value) -> GrepArgs {
    serde_json::from_value(v).unwrap()
}

fn glob_args(v: Value) -> GlobArgs {
    serde_json::from_value(v).unwrap()
}

fn grep(root: &Path, v: Value) -> SearchOutput {
    search::grep(&jail(root), &grep_args(v)).unwrap()
}

fn glob(root: &Path, v: Value) -> SearchOutput {
    search::glob(&jail(root), &glob_args(v)).unwrap()
}

#[test]
fn grep_matches_and_format() {
    let dir = project();
    let cases: &[(Value, &[&str])] = &[
        // Case-insensitive by default; ignored, hidden and binary files are not searched.
        (
            json!({"pattern": "hello"}),
            &[
                "README.md:1: Hello readme",
                "docs/a.md:1: hello docs",
                "src/lib.rs:1: pub fn hello() {}",
                "src/lib.rs:2: // HELLO world",
                "src/main.rs:2:     println!(\"Hello\");",
            ],
        ),
        (
            json!({"pattern": "Hello", "caseSensitive": true}),
            &[
                "README.md:1: Hello readme",
                "src/main.rs:2:     println!(\"Hello\");",
            ],
        ),
        (
            json!({"pattern": "a.b(c)", "literal": true}),
            &["special.txt:1: call a.b(c) here"],
        ),
        (
            json!({"pattern": r"a.b\(c\)"}),
            &[
                "special.txt:1: call a.b(c) here",
                "special.txt:2: axb(c) no",
            ],
        ),
        (
            json!({"pattern": r"^\s+println"}),
            &["src/main.rs:2:     println!(\"Hello\");"],
        ),
        // A glob without '/' matches file names at any depth.
        (
            json!({"pattern": "hello", "glob": "*.md"}),
            &["README.md:1: Hello readme", "docs/a.md:1: hello docs"],
        ),
        // With '/', it matches the root-relative path and '*' does not cross directories.
        (
            json!({"pattern": "fn|const", "glob": "src/*.rs"}),
            &[
                "src/lib.rs:1: pub fn hello() {}",
                "src/main.rs:1: fn main() {",
            ],
        ),
        (
            json!({"pattern": "fn|const", "glob": "src/**/*.rs"}),
            &[
                "src/deep/x.rs:1: const X: u8 = 1;",
                "src/lib.rs:1: pub fn hello() {}",
                "src/main.rs:1: fn main() {",
            ],
        ),
        // Relative to `path` works too.
        (
            json!({"pattern": "const", "path": "src", "glob": "deep/*.rs"}),
            &["src/deep/x.rs:1: const X: u8 = 1;"],
        ),
        (
            json!({"pattern": "hello", "path": "src"}),
            &[
                "src/lib.rs:1: pub fn hello() {}",
                "src/lib.rs:2: // HELLO world",
                "src/main.rs:2:     println!(\"Hello\");",
            ],
        ),
        (
            json!({"pattern": "hello", "path": "./src/../docs"}),
            &["docs/a.md:1: hello docs"],
        ),
        (
            json!({"pattern": "println", "path": "src/main.rs"}),
            &["src/main.rs:2:     println!(\"Hello\");"],
        ),
        // Naming a hidden or ignored directory or file searches it.
        (
            json!({"pattern": "hello", "path": "app.log"}),
            &["app.log:1: hello log"],
        ),
        (
            json!({"pattern": "hello", "path": ".hidden/h.rs"}),
            &[".hidden/h.rs:1: hello hidden"],
        ),
        (
            json!({"pattern": "hello", "path": ".hidden"}),
            &[".hidden/h.rs:1: hello hidden"],
        ),
        (
            json!({"pattern": "hello", "path": "target"}),
            &["target/out.rs:1: fn hello_built() {}"],
        ),
    ];
    for (args, want) in cases {
        let out = grep(dir.path(), args.clone());
        assert_eq!(out.lines, *want, "{args}");
        assert!(!out.truncated, "{args}");
        assert_eq!(out.notice, None, "{args}");
        assert_eq!(out.render(), want.join("\n"), "{args}");
    }
}

#[test]
fn grep_no_match_says_so() {
    let dir = project();
    let out = grep(dir.path(), json!({"pattern": "zebra"}));
    assert!(out.lines.is_empty());
    assert!(!out.truncated);
    let notice = out.notice.clone().unwrap();
    assert!(notice.contains("no matches for \"zebra\""), "{notice}");
    assert_eq!(out.render(), notice);
}

#[test]
fn glob_matches() {
    let dir = project();
    let cases: &[(Value, &[&str])] = &[
        (
            json!({"pattern": "**/*.rs"}),
            &["src/deep/x.rs", "src/lib.rs", "src/main.rs"],
        ),
        (json!({"pattern": "*.md"}), &["README.md", "docs/a.md"]),
        (json!({"pattern": "./*.md"}), &["README.md", "docs/a.md"]),
        (
            json!({"pattern": "src/*.rs"}),
            &["src/lib.rs", "src/main.rs"],
        ),
        (
            json!({"pattern": "*.rs", "path": "src/deep"}),
            &["src/deep/x.rs"],
        ),
        (
            json!({"pattern": "*.rs", "path": "src/main.rs"}),
            &["src/main.rs"],
        ),
        (json!({"pattern": "*.md", "path": "src/main.rs"}), &[]),
        (json!({"pattern": "*.log", "path": "app.log"}), &["app.log"]),
        (
            json!({"pattern": "deep/*", "path": "src"}),
            &["src/deep/x.rs"],
        ),
        (
            json!({"pattern": "{a,README}.md"}),
            &["README.md", "docs/a.md"],
        ),
        // Directories only with includeDirs.
        (json!({"pattern": "deep"}), &[]),
        (
            json!({"pattern": "deep", "includeDirs": true}),
            &["src/deep"],
        ),
        (
            json!({"pattern": "*", "path": "src", "includeDirs": true}),
            &["src/deep", "src/deep/x.rs", "src/lib.rs", "src/main.rs"],
        ),
        (
            json!({"pattern": "*", "includeDirs": true}),
            &[
                "README.md",
                "bin.dat",
                "docs",
                "docs/a.md",
                "special.txt",
                "src",
                "src/deep",
                "src/deep/x.rs",
                "src/lib.rs",
                "src/main.rs",
            ],
        ),
        // Ignored and hidden entries are skipped unless named as the path.
        (json!({"pattern": "*.log"}), &[]),
        (
            json!({"pattern": "*.rs", "path": "target"}),
            &["target/out.rs"],
        ),
        (
            json!({"pattern": "*.rs", "path": ".hidden"}),
            &[".hidden/h.rs"],
        ),
    ];
    for (args, want) in cases {
        let out = glob(dir.path(), args.clone());
        assert_eq!(out.lines, *want, "{args}");
        assert!(!out.truncated, "{args}");
        if want.is_empty() {
            assert!(out.notice.unwrap().contains("no paths matched"), "{args}");
        } else {
            assert_eq!(out.notice, None, "{args}");
        }
    }
}

#[test]
fn grep_cap_truncates_with_notice() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..30 {
        write(
            dir.path(),
            &format!("f{i:02}.txt"),
            "match one\nno\nmatch two\n",
        );
    }
    // (maxResults, lines kept, truncated)
    for (max, kept, truncated) in [
        (10, 10, true),
        (59, 59, true),
        (60, 60, false),
        (500, 60, false),
    ] {
        let out = grep(dir.path(), json!({"pattern": "match", "maxResults": max}));
        assert_eq!(out.lines.len(), kept, "max {max}");
        assert_eq!(out.truncated, truncated, "max {max}");
        let mut sorted = out.lines.clone();
        sorted.sort();
        assert_eq!(out.lines, sorted, "kept results are sorted");
        if truncated {
            let notice =
                format!("[results truncated at {max} matches; narrow the pattern or the path]");
            assert_eq!(out.notice.as_deref(), Some(notice.as_str()));
            assert!(out.render().ends_with(&format!("\n{notice}")));
        } else {
            assert_eq!(out.notice, None);
        }
    }
}

#[test]
fn glob_cap_truncates_with_notice() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..50 {
        write(dir.path(), &format!("d{}/f{i:02}.rs", i % 5), "");
    }
    for (max, kept, truncated) in [
        (1, 1, true),
        (20, 20, true),
        (50, 50, false),
        (1000, 50, false),
    ] {
        let out = glob(dir.path(), json!({"pattern": "**/*.rs", "maxResults": max}));
        assert_eq!(out.lines.len(), kept, "max {max}");
        assert_eq!(out.truncated, truncated, "max {max}");
        let mut sorted = out.lines.clone();
        sorted.sort();
        assert_eq!(out.lines, sorted);
        let want = truncated
            .then(|| format!("[results truncated at {max} paths; narrow the pattern or the path]"));
        assert_eq!(out.notice, want);
    }
}

#[test]
fn grep_sorts_by_path_then_numeric_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 1..=12 {
        text.push_str(if i == 2 || i == 10 || i == 11 {
            "x\n"
        } else {
            "-\n"
        });
    }
    // Created in reverse order so directory order is unlikely to be sorted already.
    for name in ["b/z.txt", "b/a.txt", "a.txt", "B.txt"] {
        write(dir.path(), name, &text);
    }
    let out = grep(dir.path(), json!({"pattern": "x"}));
    let want: Vec<String> = ["B.txt", "a.txt", "b/a.txt", "b/z.txt"]
        .iter()
        .flat_map(|p| [2, 10, 11].map(|l| format!("{p}:{l}: x")))
        .collect();
    assert_eq!(out.lines, want);
}

#[test]
fn ignore_files_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, ".gitignore", "*.log\nbuild/\n/top.txt\n");
    write(r, "sub/.gitignore", "!keep.log\nlocal.txt\n");
    write(r, "sub/deeper/.ignore", "secret.*\n");
    write(r, ".git/info/exclude", "excluded.txt\n");
    for f in [
        "a.log",
        "top.txt",
        "build/x.txt",
        "sub/top.txt",
        "sub/keep.log",
        "sub/drop.log",
        "sub/local.txt",
        "sub/deeper/secret.rs",
        "sub/deeper/ok.rs",
        "excluded.txt",
        "sub/excluded.txt",
        "kept.txt",
    ] {
        write(r, f, "needle\n");
    }
    // (path, expected files with a match)
    let cases: &[(&str, &[&str])] = &[
        (
            ".",
            &[
                "kept.txt",
                "sub/deeper/ok.rs",
                "sub/keep.log",
                "sub/top.txt",
            ],
        ),
        // Walking from a subdirectory still applies the root's rules and git excludes.
        ("sub", &["sub/deeper/ok.rs", "sub/keep.log", "sub/top.txt"]),
        ("sub/deeper", &["sub/deeper/ok.rs"]),
        // An explicitly named ignored directory is searched.
        ("build", &["build/x.txt"]),
    ];
    for (path, want) in cases {
        let out = grep(r, json!({"pattern": "needle", "path": path}));
        let got: Vec<&str> = out
            .lines
            .iter()
            .map(|l| l.split(':').next().unwrap())
            .collect();
        assert_eq!(got, *want, "grep path {path}");
        let out = glob(r, json!({"pattern": "**/*", "path": path}));
        assert_eq!(out.lines, *want, "glob path {path}");
    }
}

#[test]
fn binary_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "text.txt", "needle\n");
    write(r, "early.bin", b"needle\0needle\n");
    // The NUL byte comes long after the first match, past the first read buffer: the file is
    // still skipped whole.
    let mut late = b"needle\n".to_vec();
    late.extend_from_slice("filler\n".repeat(60_000).as_bytes());
    late.extend_from_slice(b"\0needle\n");
    write(r, "late.bin", &late);
    let out = grep(r, json!({"pattern": "needle", "maxResults": 500}));
    assert_eq!(out.lines, ["text.txt:1: needle"]);
    assert!(!out.truncated);
}

#[test]
fn long_lines_are_cut_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let mut line = "é".repeat(1500); // 3000 bytes of two-byte characters
    line.push_str("NEEDLE");
    line.push_str(&"z".repeat(2000));
    write(r, "min.js", format!("short NEEDLE\n{line}\n"));
    let out = grep(r, json!({"pattern": "needle"}));
    assert_eq!(out.lines.len(), 2, "{:?}", out.lines);
    assert_eq!(out.lines[0], "min.js:1: short NEEDLE");
    let cut = &out.lines[1];
    assert!(cut.starts_with("min.js:2: …é"), "{cut}");
    assert!(cut.contains("NEEDLE"), "{cut}");
    assert!(cut.ends_with("z… [line truncated: 5006 bytes]"), "{cut}");
    assert!(cut.len() < 600, "{}", cut.len());
}

#[test]
fn bad_arguments_name_the_field() {
    let dir = project();
    let j = jail(dir.path());
    // (grep args, words the message must contain)
    let grep_cases: &[(Value, &[&str])] = &[
        (
            json!({"pattern": "("}),
            &[
                "`pattern` \"(\" is not a valid regex",
                "unclosed group",
                "\"literal\": true",
            ],
        ),
        (json!({"pattern": "(?<=a)b"}), &["`pattern`", "look-around"]),
        (
            json!({"pattern": "[z-a]"}),
            &["`pattern`", "invalid character class range"],
        ),
        (
            json!({"pattern": r"\w{500}\w{500}\w{500}"}),
            &["`pattern`", "size limit", "shorter pattern"],
        ),
        (json!({"pattern": "a\nb"}), &["`pattern`", "single lines"]),
        (json!({"pattern": ""}), &["`pattern` is empty"]),
        (
            json!({"pattern": "x", "glob": "a[b"}),
            &["`glob`", "\"a[b\"", "not a valid glob"],
        ),
        (json!({"pattern": "x", "glob": ""}), &["`glob` is empty"]),
        (
            json!({"pattern": "x", "glob": "/etc/*"}),
            &["`glob`", "absolute"],
        ),
        (
            json!({"pattern": "x", "maxResults": 501}),
            &["`maxResults`", "501", "500"],
        ),
        (
            json!({"pattern": "x", "maxResults": 0}),
            &["`maxResults`", "at least 1"],
        ),
        (
            json!({"pattern": "x", "path": "nope"}),
            &["\"nope\"", "does not exist"],
        ),
    ];
    for (args, words) in grep_cases {
        let msg = search::grep(&j, &grep_args(args.clone()))
            .unwrap_err()
            .to_string();
        for w in *words {
            assert!(msg.contains(w), "{args}: {msg:?} lacks {w:?}");
        }
    }
    let glob_cases: &[(Value, &[&str])] = &[
        (
            json!({"pattern": "**/{a"}),
            &["`pattern`", "not a valid glob"],
        ),
        (json!({"pattern": ""}), &["`pattern` is empty"]),
        (
            json!({"pattern": "*", "maxResults": 1001}),
            &["`maxResults`", "1001", "1000"],
        ),
    ];
    for (args, words) in glob_cases {
        let msg = search::glob(&j, &glob_args(args.clone()))
            .unwrap_err()
            .to_string();
        for w in *words {
            assert!(msg.contains(w), "{args}: {msg:?} lacks {w:?}");
        }
    }
    // Unknown fields and wrong types are rejected when the args are parsed, naming the field.
    for (args, word) in [
        (json!({"pattern": "x", "regex": true}), "regex"),
        (json!({"pattern": "x", "max_results": 3}), "max_results"),
        (
            json!({"pattern": "x", "caseSensitive": "yes"}),
            "invalid type",
        ),
        (json!({}), "pattern"),
    ] {
        let msg = serde_json::from_value::<GrepArgs>(args.clone())
            .unwrap_err()
            .to_string();
        assert!(msg.contains(word), "{args}: {msg}");
    }
    let msg = serde_json::from_value::<GlobArgs>(json!({"pattern": "*", "include_dirs": true}))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("include_dirs"), "{msg}");
}

#[test]
fn defaults_follow_the_design() {
    let g = glob_args(json!({"pattern": "*"}));
    assert_eq!(
        (g.path.as_str(), g.include_dirs, g.max_results),
        (".", false, 200)
    );
    let g = grep_args(json!({"pattern": "x"}));
    assert_eq!(
        (
            g.path.as_str(),
            g.glob,
            g.literal,
            g.case_sensitive,
            g.max_results
        ),
        (".", None, false, false, 100)
    );
    let schema = serde_json::to_value(schemars::schema_for!(GrepArgs)).unwrap();
    assert_eq!(schema["properties"]["maxResults"]["maximum"], 500);
    assert_eq!(schema["required"], json!(["pattern"]));
    let schema = serde_json::to_value(schemars::schema_for!(GlobArgs)).unwrap();
    assert_eq!(schema["properties"]["maxResults"]["maximum"], 1000);
    assert!(schema["properties"]["includeDirs"].is_object());
}

/// An outside directory holding a secret, and a root with links to it and to `/`.
fn escape_setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "outside_name.txt", "SECRET_MARKER\n");
    write(outside.path(), "sub/outside_deep.rs", "SECRET_MARKER\n");
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "inside.txt", "INSIDE_MARKER\n");
    symlink(outside.path(), root.path().join("dirlink")).unwrap();
    symlink(
        outside.path().join("outside_name.txt"),
        root.path().join("filelink.txt"),
    )
    .unwrap();
    symlink("/", root.path().join("rootlink")).unwrap();
    symlink("../../../../../../../../etc", root.path().join("etclink")).unwrap();
    // Links that stay inside are not listed or searched either (only what they point to is).
    symlink("inside.txt", root.path().join("innerlink.txt")).unwrap();
    write(root.path(), "real/deep.txt", "DEEP_MARKER\n");
    symlink("real", root.path().join("innerdir")).unwrap();
    (root, outside)
}

fn assert_no_leak(out: &SearchOutput, what: &str) {
    // The notice echoes the pattern; only the results themselves could leak.
    let text = out.lines.join("\n");
    for bad in [
        "SECRET_MARKER",
        "outside_name",
        "outside_deep",
        "root:x:",
        "passwd",
        "/tmp",
        "link",
    ] {
        assert!(!text.contains(bad), "{what}: {bad:?} leaked in {text:?}");
    }
}

#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    let (root, _outside) = escape_setup();
    let r = root.path();
    for args in [
        json!({"pattern": "SECRET_MARKER"}),
        json!({"pattern": "root:x:"}),
        json!({"pattern": "."}),
        json!({"pattern": "MARKER", "glob": "**/*"}),
    ] {
        let out = grep(r, args.clone());
        assert_no_leak(&out, &args.to_string());
    }
    let out = grep(r, json!({"pattern": "MARKER"}));
    assert_eq!(
        out.lines,
        [
            "inside.txt:1: INSIDE_MARKER",
            "real/deep.txt:1: DEEP_MARKER"
        ]
    );
    // A path through an inside link walks its target, shown by its real path.
    let out = grep(r, json!({"pattern": "MARKER", "path": "innerdir"}));
    assert_eq!(out.lines, ["real/deep.txt:1: DEEP_MARKER"]);
    for args in [
        json!({"pattern": "**/*", "includeDirs": true}),
        json!({"pattern": "*link*", "includeDirs": true}),
        json!({"pattern": "**/passwd"}),
    ] {
        let out = glob(r, args.clone());
        assert_no_leak(&out, &args.to_string());
    }
    let out = glob(r, json!({"pattern": "**/*", "includeDirs": true}));
    assert_eq!(out.lines, ["inside.txt", "real", "real/deep.txt"]);
}

#[test]
fn paths_outside_the_root_are_rejected() {
    let (root, outside) = escape_setup();
    let j = jail(root.path());
    let abs_outside = outside.path().display().to_string();
    for path in [
        "..",
        "../..",
        "/",
        "/etc",
        "~",
        "~/x",
        "dirlink",
        "dirlink/sub",
        "filelink.txt",
        "rootlink",
        "rootlink/etc",
        "etclink",
        abs_outside.as_str(),
    ] {
        let msg = search::grep(&j, &grep_args(json!({"pattern": "x", "path": path})))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("outside the sandbox"), "grep {path}: {msg}");
        let msg = search::glob(&j, &glob_args(json!({"pattern": "*", "path": path})))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("outside the sandbox"), "glob {path}: {msg}");
    }
    // Even full-access, where the engine may allow outside paths, search stays in the root.
    let full = Jail::new(root.path(), SandboxMode::FullAccess).unwrap();
    let err = search::grep(
        &full,
        &grep_args(json!({"pattern": "x", "path": abs_outside})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("outside the sandbox root"), "{err}");
}

/// One thread keeps exchanging a real directory with a symlink to an outside directory (same
/// names inside, secret content) while searches run; nothing from outside may ever show.
#[test]
fn directory_swapped_for_symlink_mid_walk_never_leaks() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_path_buf();
    for i in 0..40 {
        write(
            &r,
            &format!("d/sub{}/inside{i}.txt", i % 4),
            "INSIDE_MARKER\n",
        );
        write(
            outside.path(),
            &format!("sub{}/inside{i}.txt", i % 4),
            "SECRET_MARKER\n",
        );
        write(
            outside.path(),
            &format!("sub{}/outside_name{i}.txt", i % 4),
            "SECRET_MARKER\n",
        );
    }
    symlink(outside.path(), r.join("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, r) = (Arc::clone(&stop), r.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    r.join("d"),
                    rustix::fs::CWD,
                    r.join("swap"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let j = jail(&r);
    let (mut runs, mut inside_seen) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(3);
    while runs < 200 || Instant::now() < deadline {
        let out = search::grep(
            &j,
            &grep_args(json!({"pattern": "MARKER", "maxResults": 500})),
        )
        .unwrap();
        for line in &out.lines {
            assert!(
                !line.contains("SECRET") && !line.contains("outside_name"),
                "{line}"
            );
            inside_seen += usize::from(line.contains("INSIDE_MARKER"));
        }
        let out = search::glob(
            &j,
            &glob_args(json!({"pattern": "**/*", "includeDirs": true})),
        )
        .unwrap();
        for line in &out.lines {
            assert!(!line.contains("outside_name"), "{line}");
        }
        runs += 1;
        if runs > 5000 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the swapper barely ran ({swaps} swaps)");
    // The searches did see the real directory some of the time: the test exercised the walk.
    assert!(inside_seen > 0, "no run ever saw the inside files");
}
