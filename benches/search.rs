//! `glob`/`grep` against `rg` over a large tree (DESIGN §10). Plain `main` (harness = false).
//!
//! Modes (`cargo bench --bench search -- <mode> ...`; `scripts/bench-search.sh` drives it):
//! - `run grep <root> <pattern> [--literal] [--case-sensitive] [--glob G] [--max N]` and
//!   `run glob <root> <pattern> [--max N]`: one query in one process, results on stdout; this is
//!   the process timed against `rg`.
//! - `compare <root> [--runs N] [--rg PATH]`: for each query of a fixed table, alternate whole
//!   process runs of `run ...` and of the equivalent `rg` command, check both found the same
//!   matches, and print medians and ratios; then time the first 100 results in-process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ground_link::jail::Jail;
use ground_link::protocol::SandboxMode;
use ground_link::tools::search::{self, GlobArgs, GrepArgs};

#[derive(Debug, Clone)]
enum Query {
    Grep {
        pattern: &'static str,
        literal: bool,
        case_sensitive: bool,
        glob: Option<&'static str>,
        max: u32,
    },
    Glob {
        pattern: &'static str,
        max: u32,
    },
}

/// Queries whose full match sets fit under the cap, so both tools do the same work.
fn table() -> Vec<(&'static str, Query)> {
    let grep = |pattern, literal, case_sensitive, glob| Query::Grep {
        pattern,
        literal,
        case_sensitive,
        glob,
        max: 500,
    };
    vec![
        ("grep literal", grep("PhantomPinned", true, true, None)),
        (
            "grep regex",
            grep(r"unsafe fn \w+_unchecked\(", false, true, None),
        ),
        (
            "grep regex 2",
            grep(r"fn [a-z_]+_mut\(&mut self\) -> &mut", false, true, None),
        ),
        ("grep -i", grep("phantom_?pinned", false, false, None)),
        (
            "grep + glob",
            grep("MaybeUninit", true, true, Some("library/core/src/**/*.rs")),
        ),
        (
            "glob **/tests/*.rs",
            Query::Glob {
                pattern: "**/tests/*.rs",
                max: 1000,
            },
        ),
        (
            "glob Cargo.toml",
            Query::Glob {
                pattern: "Cargo.toml",
                max: 1000,
            },
        ),
    ]
}

impl Query {
    fn our_args(&self) -> Vec<String> {
        let mut a = vec!["run".to_string()];
        match self {
            Query::Grep {
                pattern,
                literal,
                case_sensitive,
                glob,
                max,
            } => {
                a.extend(["grep".into(), "ROOT".into(), pattern.to_string()]);
                if *literal {
                    a.push("--literal".into());
                }
                if *case_sensitive {
                    a.push("--case-sensitive".into());
                }
                if let Some(g) = glob {
                    a.extend(["--glob".into(), g.to_string()]);
                }
                a.extend(["--max".into(), max.to_string()]);
            }
            Query::Glob { pattern, max } => {
                a.extend(["glob".into(), "ROOT".into(), pattern.to_string()]);
                a.extend(["--max".into(), max.to_string()]);
            }
        }
        a
    }

    /// The same query for `rg`: no config file, no ignore files above the tree, .gitignore
    /// honoured outside git repositories too (what our tool does).
    fn rg_args(&self) -> Vec<String> {
        let mut a: Vec<String> = [
            "--no-config",
            "--no-require-git",
            "--no-ignore-parent",
            "--no-ignore-global",
            "--color",
            "never",
        ]
        .map(String::from)
        .to_vec();
        match self {
            Query::Grep {
                pattern,
                literal,
                case_sensitive,
                glob,
                ..
            } => {
                a.extend(["--line-number", "--no-heading", "--with-filename"].map(String::from));
                a.push(if *case_sensitive { "-s" } else { "-i" }.into());
                if *literal {
                    a.push("-F".into());
                }
                if let Some(g) = glob {
                    a.extend(["-g".into(), g.to_string()]);
                }
                a.extend(["-e".into(), pattern.to_string()]);
            }
            Query::Glob { pattern, .. } => {
                a.extend(["--files".into(), "-g".into(), pattern.to_string()]);
            }
        }
        a.push(".".into());
        a
    }

    /// Result identity: `path:line` for grep, the path for glob.
    fn keys(&self, out: &str, from_rg: bool) -> BTreeSet<String> {
        out.lines()
            .filter(|l| !l.starts_with('['))
            .map(|l| {
                let l = if from_rg {
                    l.strip_prefix("./").unwrap_or(l)
                } else {
                    l
                };
                match self {
                    Query::Grep { .. } => l.splitn(3, ':').take(2).collect::<Vec<_>>().join(":"),
                    Query::Glob { .. } => l.to_string(),
                }
            })
            .collect()
    }
}

fn main() {
    // `cargo bench` appends `--bench`; it means nothing here.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("compare") => compare(&args[1..]),
        _ => {
            eprintln!(
                "usage: search run grep|glob <root> <pattern> [options]\n       search compare <root> [--runs N] [--rg PATH]"
            );
            std::process::exit(2);
        }
    }
}

fn flag(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a == name)
}

fn opt<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn run(args: &[String]) {
    let (tool, root, pattern) = (&args[0], Path::new(&args[1]), args[2].clone());
    let jail = Jail::new(root, SandboxMode::ReadOnly).expect("corpus root");
    let max = opt(args, "--max").map(|m| m.parse().expect("--max N"));
    let out = match tool.as_str() {
        "grep" => search::grep(
            &jail,
            &GrepArgs {
                pattern,
                path: ".".into(),
                glob: opt(args, "--glob").map(String::from),
                literal: flag(args, "--literal"),
                case_sensitive: flag(args, "--case-sensitive"),
                max_results: max.unwrap_or(100),
            },
        ),
        "glob" => search::glob(
            &jail,
            &GlobArgs {
                pattern,
                path: ".".into(),
                include_dirs: false,
                max_results: max.unwrap_or(200),
            },
        ),
        other => panic!("unknown tool {other}"),
    };
    match out {
        Ok(out) => println!("{}", out.render()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

/// Wall time, CPU time (user + system, from the reaped child's accounting) and stdout.
fn time_process(cmd: &mut Command) -> (Duration, Duration, String) {
    let cpu_before = children_cpu();
    let start = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("spawn");
    let wall = start.elapsed();
    let cpu = children_cpu().saturating_sub(cpu_before);
    (wall, cpu, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// CPU time of all reaped children so far (`cutime + cstime` of /proc/self/stat, in clock
/// ticks of 10 ms: coarse per run, fine summed over runs).
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // After the state field: ppid is field 4, so cutime (16) and cstime (17) are at 12 and 13.
    let ticks = fields.get(12).copied().unwrap_or(0) + fields.get(13).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn compare(args: &[String]) {
    let root = PathBuf::from(&args[0]);
    let runs: usize = opt(args, "--runs").map_or(11, |r| r.parse().expect("--runs N"));
    let rg = opt(args, "--rg").unwrap_or("rg");
    let me = std::env::current_exe().expect("own path");
    println!(
        "corpus {} ({} runs each, alternating; whole-process medians)",
        root.display(),
        runs
    );
    println!(
        "{:<20} {:>8} {:>9} {:>9} {:>7} {:>9}  same matches",
        "query", "matches", "ours ms", "rg ms", "ratio", "cpu ratio"
    );
    let mut worst: f64 = 0.0;
    let mut all_same = true;
    for (name, q) in table() {
        let ours_args: Vec<String> = q
            .our_args()
            .into_iter()
            .map(|a| {
                if a == "ROOT" {
                    root.display().to_string()
                } else {
                    a
                }
            })
            .collect();
        let ours_cmd = || {
            let mut c = Command::new(&me);
            c.args(&ours_args);
            c
        };
        let rg_args = q.rg_args();
        let rg_cmd = || {
            let mut c = Command::new(rg);
            c.args(&rg_args).current_dir(&root);
            c
        };
        // Warm the page cache and take the outputs compared below.
        let (_, _, our_out) = time_process(&mut ours_cmd());
        let (_, _, rg_out) = time_process(&mut rg_cmd());
        let truncated = our_out.lines().any(|l| l.starts_with("[results truncated"));
        let (ours_keys, rg_keys) = (q.keys(&our_out, false), q.keys(&rg_out, true));
        let same = if truncated {
            ours_keys.is_subset(&rg_keys)
        } else {
            ours_keys == rg_keys
        };
        if !same {
            all_same = false;
            let only_ours: Vec<_> = ours_keys.difference(&rg_keys).take(5).collect();
            let only_rg: Vec<_> = rg_keys.difference(&ours_keys).take(5).collect();
            eprintln!("{name}: only ours {only_ours:?}, only rg {only_rg:?}");
        }
        let (mut ours_t, mut rg_t) = (Vec::new(), Vec::new());
        let (mut ours_cpu, mut rg_cpu) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..runs {
            let (wall, cpu, _) = time_process(&mut ours_cmd());
            ours_t.push(wall);
            ours_cpu += cpu;
            let (wall, cpu, _) = time_process(&mut rg_cmd());
            rg_t.push(wall);
            rg_cpu += cpu;
        }
        let (o, r) = (median(ours_t), median(rg_t));
        let ratio = o.as_secs_f64() / r.as_secs_f64();
        worst = worst.max(ratio);
        let cpu_ratio = ours_cpu.as_secs_f64() / rg_cpu.as_secs_f64().max(1e-9);
        println!(
            "{:<20} {:>8} {:>9} {:>9} {:>7.2} {:>9.2}  {}",
            name,
            ours_keys.len(),
            ms(o),
            ms(r),
            ratio,
            cpu_ratio,
            if same {
                if truncated { "subset (capped)" } else { "yes" }
            } else {
                "NO"
            }
        );
    }
    println!("worst ratio {worst:.2} (budget 1.10)");

    // In-process: how long until the model has its first 100 results.
    let jail = Jail::new(&root, SandboxMode::ReadOnly).expect("corpus root");
    println!("\nfirst 100 results, in-process ({runs} runs, median; budget 10 ms)");
    enum Call {
        Grep(GrepArgs),
        Glob(GlobArgs),
    }
    let grep100 = |pattern: &str, case_sensitive| {
        Call::Grep(GrepArgs {
            pattern: pattern.into(),
            path: ".".into(),
            glob: None,
            literal: false,
            case_sensitive,
            max_results: 100,
        })
    };
    let first = [
        ("grep \"fn\" (100 of many)", grep100("fn", true)),
        ("grep -i \"unsafe\"", grep100("unsafe", false)),
        (
            "glob **/*.rs",
            Call::Glob(GlobArgs {
                pattern: "**/*.rs".into(),
                path: ".".into(),
                include_dirs: false,
                max_results: 100,
            }),
        ),
    ];
    for (name, args) in first {
        let mut t = Vec::new();
        let mut n = 0;
        for _ in 0..runs {
            let s = Instant::now();
            n = match &args {
                Call::Grep(g) => search::grep(&jail, g).unwrap().lines.len(),
                Call::Glob(g) => search::glob(&jail, g).unwrap().lines.len(),
            };
            t.push(s.elapsed());
        }
        println!("{:<26} {:>4} results {:>7} ms", name, n, ms(median(t)));
    }
    if !all_same {
        eprintln!("match sets differ (see above)");
        std::process::exit(1);
    }
}
