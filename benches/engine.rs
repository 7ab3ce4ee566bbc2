//! Benchmarks for the permission engine (DESIGN §10): a decision with 1,000 rules in force
//! (goal ≤ 5 µs p50) and classifying a 1,000-character command (goal ≤ 50 µs); whole checks
//! (facts gathered, then the decision) are printed beside them without a budget of their own.
//!
//! `cargo bench --bench engine` (or `make bench`). Prints p50/p99 per case; figures go into
//! notes, never into tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The allocator the binaries use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use ground_link::approval::DenyApprover;
use ground_link::engine::{Engine, EngineConfig, parse_request};
use ground_link::paths::ConfigPaths;
use ground_link::policy::classify::{ClassifyContext, classify};
use ground_link::protocol::Verdict;

fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (p(0.50), p(0.99))
}

/// Time `f` in batches (a single call is below the clock's resolution) and report per call.
/// `BENCH_FILTER=classify` measures only the figures whose name contains it, and
/// `BENCH_SAMPLES=N` takes N batches instead of 4,000 (for profiling, e.g. under callgrind).
fn measure(name: &str, goal_us: f64, f: impl FnMut()) {
    report(name, Some(goal_us), f);
}

/// [`measure`] for a figure DESIGN §10 sets no budget for (printed for comparison only).
fn measure_only(name: &str, f: impl FnMut()) {
    report(name, None, f);
}

fn report(name: &str, goal_us: Option<f64>, mut f: impl FnMut()) {
    if !selected(name) {
        return;
    }
    let samples_wanted: usize = std::env::var("BENCH_SAMPLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4000);
    for _ in 0..samples_wanted.min(2000) {
        f();
    }
    let batch = 64;
    let mut samples = Vec::with_capacity(samples_wanted);
    for _ in 0..samples_wanted.max(1) {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        samples.push(t.elapsed().as_secs_f64() * 1e6 / batch as f64);
    }
    let (p50, p99) = percentiles(samples);
    let goal = match goal_us {
        Some(g) if p50 <= g => format!("goal p50 ≤ {g} µs  ok"),
        Some(g) => format!("goal p50 ≤ {g} µs  OVER"),
        None => "(no budget of its own)".to_owned(),
    };
    println!("{name:<58} p50 {p50:>8.2} µs   p99 {p99:>8.2} µs   {goal}");
}

fn selected(name: &str) -> bool {
    std::env::var("BENCH_FILTER").map_or(true, |only| name.contains(&only))
}

fn thousand_rules() -> String {
    let mut rules = Vec::new();
    for i in 0..400 {
        rules.push(serde_json::json!({"id": format!("deny-tool-{i}"), "action": "deny", "tool": "exec_cmd", "match": {"commandPrefix": format!("tool{i} run")}}));
    }
    for i in 0..300 {
        rules.push(serde_json::json!({"id": format!("deny-dir-{i}"), "action": "deny", "tool": "*", "match": {"pathGlob": format!("secret{i}/**/*.key")}}));
    }
    for i in 0..100 {
        rules.push(serde_json::json!({"id": format!("ask-{i}"), "action": "ask", "tool": "exec_cmd", "match": {"commandPrefix": format!("deploy{i}")}}));
    }
    for i in 0..200 {
        rules.push(serde_json::json!({"id": format!("allow-{i}"), "action": "allow", "tool": "write_file", "match": {"pathGlob": format!("gen{i}/**")}}));
    }
    serde_json::json!({"version": 1, "rules": rules}).to_string()
}

fn main() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let paths = ConfigPaths::under(base.path());
    std::fs::create_dir_all(&paths.config_dir).unwrap();
    std::fs::write(paths.global_rules(), thousand_rules()).unwrap();
    let mut config = EngineConfig::new(root.clone(), paths);
    config.supervisor_exe = PathBuf::from(env!("CARGO_BIN_EXE_ground-link"));
    config.audit = false;
    let engine = Engine::new(config, Arc::new(DenyApprover { reason: None })).unwrap();
    assert_eq!(
        engine.policy().snapshot().global.rules.len(),
        1000,
        "{:?}",
        engine.policy().snapshot().global.error
    );

    println!("ground-link engine benchmarks (1,000 rules in force)");
    for (name, call, want) in [
        (
            "check: write_file src/lib.rs (walks every rule)",
            r#"{"name":"write_file","args":{"path":"src/lib.rs","content":"x"}}"#,
            Verdict::Ask,
        ),
        (
            "check: write_file gen150/a.rs (allow rule #150)",
            r#"{"name":"write_file","args":{"path":"gen150/a.rs","content":"x"}}"#,
            Verdict::Allow,
        ),
        (
            "check: exec git status (classify + rules)",
            r#"{"name":"exec_cmd","args":{"command":"git status"}}"#,
            Verdict::Allow,
        ),
        (
            "check: exec tool399 run x (deny rule #399)",
            r#"{"name":"exec_cmd","args":{"command":"tool399 run x"}}"#,
            Verdict::Deny,
        ),
    ] {
        if !selected(name) {
            continue;
        }
        let req = parse_request(call).unwrap();
        assert_eq!(engine.check(&req).decision, want, "{name}");
        // A whole check: the decision below (the budget) plus gathering its facts — for a
        // command, classifying it and walking the root for the secrets its namespace hides.
        measure_only(name, || {
            std::hint::black_box(engine.check(std::hint::black_box(&req)));
        });
    }

    // The decision alone (DESIGN §10's budget): facts gathered, 1,000 rules consulted.
    {
        use ground_link::policy::{CallFacts, PathFact, PolicySettings, decide};
        use ground_link::protocol::{ApprovalMode, Risk, SandboxMode, ToolName};
        let snap = engine.policy().snapshot();
        let settings = PolicySettings {
            sandbox: SandboxMode::WorkspaceWrite,
            mode: ApprovalMode::Ask,
            exec_confined: true,
            exec_must_ask: None,
        };
        for (name, rel, want) in [
            (
                "decide: write_file src/lib.rs (no rule matches)",
                "src/lib.rs",
                Verdict::Ask,
            ),
            (
                "decide: write_file gen150/a.rs (allow rule #150)",
                "gen150/a.rs",
                Verdict::Allow,
            ),
            (
                "decide: write_file secret299/k/a.key (deny rule)",
                "secret299/k/a.key",
                Verdict::Deny,
            ),
        ] {
            let facts = CallFacts {
                tool: ToolName::WriteFile,
                paths: &[PathFact {
                    shown: rel.into(),
                    rel: rel.into(),
                    inside: true,
                    class: None,
                    write: true,
                    from_command: false,
                }],
                path_errors: &[],
                analysis: None,
                session: None,
                provenance: None,
                browser: None,
            };
            assert_eq!(
                decide(&facts, Risk::Moderate, &snap, &[], &settings)
                    .decision
                    .decision,
                want,
                "{name}"
            );
            measure(name, 5.0, || {
                std::hint::black_box(decide(
                    std::hint::black_box(&facts),
                    Risk::Moderate,
                    &snap,
                    &[],
                    &settings,
                ));
            });
        }
    }

    // One whole auto-allowed read_file call through the engine (no HTTP), audit included.
    {
        std::fs::write(root.join("data.txt"), "x".repeat(4000) + "\n").unwrap();
        let mut config =
            EngineConfig::new(root.clone(), ConfigPaths::under(&base.path().join("call")));
        config.supervisor_exe = PathBuf::from(env!("CARGO_BIN_EXE_ground-link"));
        config.audit = true;
        let engine = Engine::new(config, Arc::new(DenyApprover { reason: None })).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let req = parse_request(r#"{"name":"read_file","args":{"path":"data.txt"}}"#).unwrap();
        measure(
            "call: read_file 4 KiB, audited (engine only, no HTTP)",
            200.0,
            || {
                std::hint::black_box(
                    rt.block_on(engine.call(req.clone(), ground_link::protocol::Source::Bridge)),
                );
            },
        );
    }

    let piece = "cat src/main.rs | grep -n 'fn ' | sort | uniq -c && ls -la src ; git log --oneline | head -n 5 ; wc -l README.md ; ";
    let mut command = String::new();
    while command.len() < 1000 {
        command.push_str(piece);
    }
    command.truncate(1000);
    let command = command.trim_end_matches(|c: char| c != ';').to_string();
    let ctx = ClassifyContext {
        root: &root,
        home: None,
    };
    measure(
        &format!("classify a {}-character command", command.len()),
        50.0,
        || {
            std::hint::black_box(classify(std::hint::black_box(&command), &ctx));
        },
    );
    // A peer in the same run: brush-parser only parsing the same line (the classifier reads a
    // plain line like this one without it, then judges every part).
    let options = brush_parser::ParserOptions::default();
    measure_only("  peer: brush-parser parsing the same line", || {
        let _ = std::hint::black_box(
            brush_parser::Parser::new(std::hint::black_box(command.as_bytes()), &options)
                .parse_program(),
        );
    });
    let simple = "git status";
    measure("classify `git status`", 50.0, || {
        std::hint::black_box(classify(std::hint::black_box(simple), &ctx));
    });
}
