//! PreToolUse / PostToolUse hooks: exit codes, failures, timeouts, matching, environment, stdin.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ground_link::hooks::{
    ENV_VALUE_CAP, HookConfigError, HookContext, HookOutcome, HookPhase, REASON_CAP, check_hook,
    hook_matches, run_hooks, run_hooks_report, try_hook,
};
use ground_link::protocol::{Hook, OnFailure, ToolName};
use serde_json::{Map, Value, json};

fn hook(id: &str, command: &str) -> Hook {
    Hook {
        id: id.to_string(),
        tool_match: "*".to_string(),
        command: command.to_string(),
        timeout: 5000,
        on_failure: OnFailure::Block,
    }
}

trait HookExt {
    fn tools(self, m: &str) -> Hook;
    fn timeout(self, ms: u64) -> Hook;
    fn skip(self) -> Hook;
}

impl HookExt for Hook {
    fn tools(mut self, m: &str) -> Hook {
        self.tool_match = m.to_string();
        self
    }
    fn timeout(mut self, ms: u64) -> Hook {
        self.timeout = ms;
        self
    }
    fn skip(mut self) -> Hook {
        self.on_failure = OnFailure::Skip;
        self
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn ctx<'a>(
    tool: ToolName,
    args: &'a Map<String, Value>,
    root: &'a Path,
    output: Option<&'a str>,
) -> HookContext<'a> {
    HookContext {
        tool,
        call_id: "call-7",
        args,
        root,
        output,
    }
}

#[derive(Debug)]
enum Want {
    Continue,
    /// Blocked by this hook, with a reason containing this text.
    Block(&'static str, &'static str),
    /// Blocked by this hook with exactly this reason.
    BlockExact(&'static str, &'static str),
}

#[tokio::test]
async fn outcomes() {
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<Hook>, Want)> = vec![
        ("exit 0 continues",              vec![hook("a", "exit 0")],                                   Want::Continue),
        ("no hooks",                      vec![],                                                      Want::Continue),
        ("exit 2 blocks with stderr",     vec![hook("a", "echo '  no rm here  ' >&2; exit 2")],        Want::BlockExact("a", "no rm here")),
        ("exit 2 blocks even with skip",  vec![hook("a", "echo nope >&2; exit 2").skip()],             Want::BlockExact("a", "nope")),
        ("exit 2 without a reason",       vec![hook("a", "exit 2")],                                   Want::Block("a", "without giving a reason")),
        ("exit 1 blocks by default",      vec![hook("a", "echo oops >&2; exit 1")],                    Want::Block("a", "exited with status 1: oops")),
        ("exit 1 is skipped with skip",   vec![hook("a", "exit 1").skip()],                            Want::Continue),
        ("exit 3 names the hook",         vec![hook("lint", "exit 3")],                                Want::Block("lint", "hook \"lint\" exited with status 3")),
        ("timeout blocks",                vec![hook("a", "sleep 30").timeout(200)],                    Want::Block("a", "timeout of 200 ms")),
        ("timeout is skipped with skip",  vec![hook("a", "sleep 30").timeout(200).skip()],             Want::Continue),
        ("missing program blocks",        vec![hook("a", "no-such-program-gl-test")],                  Want::Block("a", "status 127")),
        ("missing program, skip",         vec![hook("a", "no-such-program-gl-test").skip()],           Want::Continue),
        ("killed by a signal",            vec![hook("a", "kill -9 $$")],                               Want::Block("a", "SIGKILL")),
        ("other tool is not matched",     vec![hook("a", "exit 2").tools("write_file")],               Want::Continue),
        ("canonical name matches",        vec![hook("a", "exit 2").tools("exec_cmd")],                 Want::Block("a", "")),
        ("alias matches",                 vec![hook("a", "exit 2").tools("Bash")],                     Want::Block("a", "")),
        ("list matches",                  vec![hook("a", "exit 2").tools("Read|cmd")],                 Want::Block("a", "")),
        ("list with spaces matches",      vec![hook("a", "exit 2").tools("read | exec")],              Want::Block("a", "")),
        ("not an alias: wrong case",      vec![hook("a", "exit 2").tools("bash")],                     Want::Continue),
        ("first block wins",              vec![hook("a", "exit 0"), hook("b", "echo B >&2; exit 2"),
                                               hook("c", "echo C >&2; exit 2")],                       Want::BlockExact("b", "B")),
        ("unmatched hooks are passed",    vec![hook("a", "exit 2").tools("Write"), hook("b", "exit 0")], Want::Continue),
        ("skipped failure, later block",  vec![hook("a", "exit 1").skip(), hook("b", "echo B >&2; exit 2")], Want::BlockExact("b", "B")),
        ("failure blocks before a later", vec![hook("a", "exit 1"), hook("b", "echo B >&2; exit 2")],  Want::Block("a", "status 1")),
    ];
    let root = tempfile::tempdir().unwrap();
    let a = args(json!({"command": "ls"}));
    for (name, hooks, want) in cases {
        let c = ctx(ToolName::ExecCmd, &a, root.path(), None);
        let got = run_hooks(HookPhase::Pre, &hooks, &c).await;
        match (&want, &got) {
            (Want::Continue, HookOutcome::Continue) => {}
            (Want::Block(id, text), HookOutcome::Block { hook_id, reason })
                if hook_id == id && reason.contains(text) => {}
            (Want::BlockExact(id, text), HookOutcome::Block { hook_id, reason })
                if hook_id == id && reason == text => {}
            _ => panic!("{name}: want {want:?}, got {got:?}"),
        }
    }
}

#[tokio::test]
async fn skipped_failures_are_reported() {
    let root = tempfile::tempdir().unwrap();
    let a = Map::new();
    let hooks = [
        hook("flaky", "echo broken >&2; exit 1").skip(),
        hook("ok", "exit 0"),
    ];
    let report = run_hooks_report(
        HookPhase::Pre,
        &hooks,
        &ctx(ToolName::ReadFile, &a, root.path(), None),
    )
    .await;
    assert_eq!(report.outcome, HookOutcome::Continue);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].hook_id, "flaky");
    assert_eq!(report.skipped[0].failure, "exited with status 1: broken");
}

#[tokio::test]
async fn hooks_after_a_block_do_not_run() {
    let root = tempfile::tempdir().unwrap();
    let marker = root.path().join("ran");
    let a = Map::new();
    let hooks = [
        hook("first", "touch first-ran"),
        hook("stop", "exit 2"),
        hook("later", &format!("touch '{}'", marker.display())),
    ];
    let out = run_hooks(
        HookPhase::Pre,
        &hooks,
        &ctx(ToolName::Glob, &a, root.path(), None),
    )
    .await;
    assert!(matches!(out, HookOutcome::Block { hook_id, .. } if hook_id == "stop"));
    assert!(root.path().join("first-ran").exists(), "cwd is the root");
    assert!(!marker.exists());
}

#[test]
fn hook_matches_names_aliases_and_lists() {
    #[rustfmt::skip]
    let cases: &[(&str, ToolName, bool)] = &[
        ("*",                  ToolName::ListDir,   true),
        ("read_file",          ToolName::ReadFile,  true),
        ("read_file",          ToolName::WriteFile, false),
        ("Read",               ToolName::ReadFile,  true),
        ("LS",                 ToolName::ListDir,   true),
        ("Edit",               ToolName::EditFile,  true),
        ("write|Edit",         ToolName::EditFile,  true),
        ("write|Edit",         ToolName::ExecCmd,   false),
        (" Bash | Grep ",      ToolName::Grep,      true),
        ("READ",               ToolName::ReadFile,  false),
        ("",                   ToolName::ReadFile,  false),
        ("nonsense|*",         ToolName::Glob,      true),
    ];
    for (m, tool, want) in cases {
        assert_eq!(
            hook_matches(&hook("h", "true").tools(m), *tool),
            *want,
            "{m:?} vs {tool}"
        );
    }
}

#[test]
fn check_hook_rejects_what_would_never_run() {
    #[rustfmt::skip]
    let cases: Vec<(Hook, Option<&str>)> = vec![
        (hook("ok", "true").tools("Bash|write_file"), None),
        (hook("typo", "true").tools("bash"),          Some("\"bash\", which is not a tool")),
        (hook("empty", "true").tools("Read|"),        Some("\"\", which is not a tool")),
        (hook("blank", "  "),                         Some("command is empty")),
        (hook("zero", "true").timeout(0),             Some("timeout is 0 ms")),
    ];
    for (h, want) in cases {
        let got = check_hook(&h).err().map(|e: HookConfigError| e.to_string());
        match (want, got) {
            (None, None) => {}
            (Some(text), Some(msg)) if msg.contains(text) => {}
            (want, got) => panic!("{}: want {want:?}, got {got:?}", h.id),
        }
    }
}

/// A hook that saves what it saw into `out`.
fn recorder(out: &Path) -> Hook {
    let o = out.display();
    let mut cmd = String::new();
    for var in [
        "TOOL_NAME",
        "TOOL_CALL_ID",
        "TOOL_INPUT_JSON",
        "TOOL_INPUT_COMMAND",
        "TOOL_INPUT_PATH",
        "TOOL_OUTPUT",
        "TOOL_INPUT_TRUNCATED",
        "WORKSPACE_PATH",
    ] {
        cmd.push_str(&format!(
            "if [ \"${{{var}+set}}\" = set ]; then printf '%s' \"${var}\" > '{o}/{var}'; fi\n"
        ));
    }
    cmd.push_str(&format!("pwd -P > '{o}/pwd'\ncat > '{o}/stdin'\n"));
    hook("recorder", &cmd)
}

fn read(out: &Path, name: &str) -> Option<String> {
    fs::read_to_string(out.join(name)).ok()
}

#[tokio::test]
async fn environment_and_stdin() {
    let big = "x".repeat(100 * 1024);
    #[rustfmt::skip]
    let cases: Vec<(&str, ToolName, Value, HookPhase, Option<&str>)> = vec![
        ("exec_cmd pre",        ToolName::ExecCmd,   json!({"command": "echo 'hi' && ls", "timeoutSec": 5}), HookPhase::Pre,  None),
        ("write_file pre",      ToolName::WriteFile, json!({"path": "src/a b.txt", "content": "x\ny"}),     HookPhase::Pre,  None),
        ("read_file post",      ToolName::ReadFile,  json!({"path": "notes.md"}),                           HookPhase::Post, Some("line 1\nline 2\n")),
        ("post, empty output",  ToolName::ListDir,   json!({}),                                              HookPhase::Post, Some("")),
        ("NUL in a command",    ToolName::ExecCmd,   json!({"command": "a\u{0}b"}),                          HookPhase::Pre,  None),
        ("non-string path",     ToolName::Glob,      json!({"path": 5, "pattern": "**/*.rs"}),               HookPhase::Pre,  None),
        ("big content",         ToolName::WriteFile, json!({"path": "big", "content": big}),                 HookPhase::Pre,  None),
        ("big output",          ToolName::ReadFile,  json!({"path": "big"}),                                 HookPhase::Post, Some(big.as_str())),
    ];
    for (name, tool, a, phase, output) in cases {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let a = args(a);
        let c = HookContext {
            tool,
            call_id: "call-42",
            args: &a,
            root: root.path(),
            output,
        };
        let got = run_hooks(phase, &[recorder(out.path())], &c).await;
        assert_eq!(got, HookOutcome::Continue, "{name}");
        let o = out.path();
        let root_real = fs::canonicalize(root.path()).unwrap();

        assert_eq!(
            read(o, "TOOL_NAME").as_deref(),
            Some(tool.as_str()),
            "{name}"
        );
        assert_eq!(
            read(o, "TOOL_CALL_ID").as_deref(),
            Some("call-42"),
            "{name}"
        );
        assert_eq!(
            read(o, "WORKSPACE_PATH").map(PathBuf::from),
            Some(root.path().to_path_buf()),
            "{name}"
        );
        assert_eq!(
            read(o, "pwd").map(|p| PathBuf::from(p.trim_end())),
            Some(root_real),
            "{name}"
        );
        let as_str = |k: &str| {
            a.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .replace('\0', "\u{FFFD}")
        };
        assert_eq!(
            read(o, "TOOL_INPUT_COMMAND"),
            Some(as_str("command")),
            "{name}"
        );
        assert_eq!(read(o, "TOOL_INPUT_PATH"), Some(as_str("path")), "{name}");

        let env_json: Value = serde_json::from_str(&read(o, "TOOL_INPUT_JSON").unwrap()).unwrap();
        let stdin: Value = serde_json::from_str(&read(o, "stdin").unwrap()).unwrap();
        assert_eq!(stdin["tool"], tool.as_str(), "{name}");
        assert_eq!(stdin["callId"], "call-42", "{name}");
        assert_eq!(stdin["phase"], phase.as_str(), "{name}");
        assert_eq!(
            stdin["args"],
            Value::Object(a.clone()),
            "{name}: stdin has the full args"
        );

        let mut truncated = Vec::new();
        if name == "big content" {
            truncated.push("TOOL_INPUT_JSON");
            assert_eq!(env_json["content"]["len"], big.len(), "{name}: summarised");
            assert_eq!(env_json["path"], "big", "{name}");
        } else {
            assert_eq!(env_json, Value::Object(a.clone()), "{name}");
        }
        match phase {
            HookPhase::Pre => {
                assert_eq!(read(o, "TOOL_OUTPUT"), None, "{name}: pre has no output");
                assert!(stdin.get("output").is_none(), "{name}");
            }
            HookPhase::Post => {
                let output = output.unwrap();
                let env_out = read(o, "TOOL_OUTPUT").unwrap();
                if output.len() > ENV_VALUE_CAP {
                    truncated.push("TOOL_OUTPUT");
                    assert_eq!(env_out.len(), ENV_VALUE_CAP, "{name}");
                    assert!(output.starts_with(&env_out), "{name}");
                } else {
                    assert_eq!(env_out, output, "{name}");
                }
                assert_eq!(
                    stdin["output"], output,
                    "{name}: stdin has the whole output"
                );
            }
        }
        let want_truncated = (!truncated.is_empty()).then(|| truncated.join(","));
        assert_eq!(read(o, "TOOL_INPUT_TRUNCATED"), want_truncated, "{name}");
    }
}

#[tokio::test]
async fn long_stderr_is_capped() {
    let root = tempfile::tempdir().unwrap();
    let a = Map::new();
    let h = hook(
        "loud",
        "i=0; while [ $i -lt 2000 ]; do echo 'deny deny deny deny deny deny deny deny' >&2; i=$((i+1)); done; exit 2",
    );
    let got = run_hooks(
        HookPhase::Pre,
        &[h],
        &ctx(ToolName::ExecCmd, &a, root.path(), None),
    )
    .await;
    let HookOutcome::Block { hook_id, reason } = got else {
        panic!("not blocked: {got:?}");
    };
    assert_eq!(hook_id, "loud");
    assert!(reason.starts_with("deny deny"));
    assert!(
        reason.len() <= REASON_CAP + '…'.len_utf8(),
        "{}",
        reason.len()
    );
}

#[tokio::test]
async fn spawn_failure_blocks_or_skips() {
    let gone = tempfile::tempdir().unwrap().path().join("missing-root");
    let a = Map::new();
    let c = ctx(ToolName::ExecCmd, &a, &gone, None);
    let blocked = run_hooks(HookPhase::Pre, &[hook("h", "exit 0")], &c).await;
    let HookOutcome::Block { hook_id, reason } = blocked else {
        panic!("a hook that cannot start must block: {blocked:?}");
    };
    assert_eq!(hook_id, "h");
    assert!(reason.contains("could not be started in"), "{reason}");
    assert!(reason.contains("missing-root"), "{reason}");
    let skipped = run_hooks(HookPhase::Pre, &[hook("h", "exit 0").skip()], &c).await;
    assert_eq!(skipped, HookOutcome::Continue);
}

/// Whether `pid` has exited (gone, or a zombie waiting for its reaper).
fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_gone(pid_file: &Path) -> bool {
    let pid: i32 = fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// How the hook ends: timed out, exited leaving a child behind, or abandoned by its caller.
#[derive(Debug, Clone, Copy)]
enum End {
    Timeout,
    ExitWithChild,
    CallerGaveUp,
}

#[tokio::test]
async fn no_process_of_a_hook_outlives_it() {
    #[rustfmt::skip]
    let cases: &[(End, &str, u64)] = &[
        (End::Timeout,       "sleep 30 & echo $! > bg.pid; wait", 300),
        (End::ExitWithChild, "sleep 30 & echo $! > bg.pid; exit 0", 5000),
        (End::CallerGaveUp,  "sleep 30 & echo $! > bg.pid; wait", 60_000),
    ];
    for (end, command, timeout) in cases {
        let root = tempfile::tempdir().unwrap();
        let a = Map::new();
        let c = ctx(ToolName::ExecCmd, &a, root.path(), None);
        let hooks = [hook("bg", command).timeout(*timeout)];
        let started = Instant::now();
        let fut = run_hooks(HookPhase::Pre, &hooks, &c);
        let got = match end {
            End::CallerGaveUp => {
                let r = tokio::time::timeout(Duration::from_millis(500), fut).await;
                assert!(r.is_err(), "{end:?}: the hook should still be running");
                None
            }
            _ => Some(fut.await),
        };
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{end:?}: waited for the sleep"
        );
        match end {
            End::Timeout => assert!(
                matches!(&got, Some(HookOutcome::Block { reason, .. }) if reason.contains("timeout of 300 ms")),
                "{end:?}: {got:?}"
            ),
            End::ExitWithChild => assert_eq!(got, Some(HookOutcome::Continue), "{end:?}"),
            End::CallerGaveUp => {}
        }
        assert!(
            wait_gone(&root.path().join("bg.pid")),
            "{end:?}: the background sleep survived"
        );
    }
}

/// "Run now": a hook tried on a sample call says whether it would block, in one sentence.
#[tokio::test]
async fn trying_a_hook_says_what_it_would_do() {
    let root = tempfile::tempdir().unwrap();
    let cases: [(Hook, bool, &str); 4] = [
        (
            hook("ok", "true"),
            false,
            "let the sample list_dir call continue",
        ),
        (
            hook("gate", "echo 'lint failed' >&2; exit 1"),
            true,
            "would block the call",
        ),
        (
            hook("soft", "exit 1").skip(),
            false,
            "onFailure \"skip\" lets the call run",
        ),
        (
            hook("bash-only", "true").tools("Bash"),
            false,
            "sample exec_cmd call",
        ),
    ];
    for (h, blocked, says) in cases {
        let run = try_hook(&h, root.path()).await.unwrap();
        assert_eq!(run.blocked, blocked, "{}: {}", h.id, run.summary);
        assert!(run.summary.contains(says), "{}: {}", h.id, run.summary);
    }
    let gate = try_hook(&hook("gate", "echo 'lint failed' >&2; exit 1"), root.path())
        .await
        .unwrap();
    assert!(gate.summary.contains("lint failed"), "{}", gate.summary);
    let bad = try_hook(&hook("x", "true").tools("Bsh"), root.path()).await;
    assert!(
        matches!(bad, Err(HookConfigError::UnknownTool { .. })),
        "{bad:?}"
    );
}

/// A hook runs as the person, outside any command's isolation: a file inside the root that a
/// hook names (`sh scripts/audit-hook.sh`) must not be the model's to rewrite — the red team
/// rewrote one in auto mode and the next call ran it with the person's ssh key in reach.
#[test]
fn files_a_hook_runs_from_the_root_are_protected_like_git_hooks() {
    let f = crate::util::Fixture::new();
    std::fs::create_dir_all(f.root.join("scripts")).unwrap();
    std::fs::write(f.root.join("scripts/audit-hook.sh"), "true\n").unwrap();
    std::fs::write(f.root.join("lint.toml"), "x = 1\n").unwrap();
    std::fs::write(f.root.join("other.sh"), "true\n").unwrap();
    let rules = serde_json::json!({
        "version": 1,
        "hooks": {"PreToolUse": [
            {"id": "audit", "command": "sh scripts/audit-hook.sh"},
            {"id": "lint", "command": "true --config=lint.toml"}
        ]}
    });
    f.put(
        &f.paths
            .global_rules()
            .strip_prefix(f.base())
            .unwrap()
            .to_string_lossy(),
        &rules.to_string(),
    );
    let engine = f.engine_with(
        ground_link::protocol::SandboxMode::WorkspaceWrite,
        ground_link::protocol::ApprovalMode::Auto,
        std::sync::Arc::new(ground_link::approval::AllowOnceApprover),
    );
    for (path, protected) in [
        ("scripts/audit-hook.sh", true),
        ("lint.toml", true),
        ("other.sh", false),
    ] {
        let write = serde_json::json!({"name":"write_file","args":{"path":path,"content":"cat ~/.ssh/id_ed25519"}}).to_string();
        let d = crate::util::check(&engine, &write);
        let want = if protected {
            ground_link::protocol::Verdict::Deny
        } else {
            ground_link::protocol::Verdict::Allow
        };
        assert_eq!(d.decision, want, "{path}: {}", d.reason);
        // A command cannot rewrite it either.
        let exec =
            serde_json::json!({"name":"exec_cmd","args":{"command":format!("echo x > {path}")}})
                .to_string();
        let d = crate::util::check(&engine, &exec);
        if protected {
            assert_eq!(
                d.decision,
                ground_link::protocol::Verdict::Deny,
                "{path}: {}",
                d.reason
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(f.root.join("scripts/audit-hook.sh")).unwrap(),
        "true\n"
    );
}
