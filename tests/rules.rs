//! Suite: rules and layers. Deny wins across layers, an allow must cover every part of a
//! compound command, untrusted project allows are ignored, broken and hostile files never
//! loosen anything, hot reload adds and revokes, scoped approvals persist where they should.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ground_link::approval::Approver;
use ground_link::protocol::{
    ApprovalAnswer, ApprovalMode, ApprovalRequest, CallStatus, Layer, SandboxMode, Scope, Verdict,
};

use crate::util::{Fixture, call, check};

const NONE: &str = "";

fn file(rules: &str) -> String {
    format!(r#"{{"version":1,"rules":[{rules}]}}"#)
}

fn exec(cmd: &str) -> String {
    serde_json::json!({"name": "exec_cmd", "args": {"command": cmd}}).to_string()
}

fn read(path: &str) -> String {
    serde_json::json!({"name": "read_file", "args": {"path": path}}).to_string()
}

struct Case {
    name: &'static str,
    managed: String,
    global: String,
    project: String,
    trust_project: bool,
    call: String,
    want: Verdict,
    /// Expected deciding rule: (id, layer).
    rule: Option<(&'static str, Layer)>,
}

fn case(
    name: &'static str,
    global: &str,
    project: &str,
    trust: bool,
    call: String,
    want: Verdict,
    rule: Option<(&'static str, Layer)>,
) -> Case {
    Case {
        name,
        managed: String::new(),
        global: global.to_string(),
        project: project.to_string(),
        trust_project: trust,
        call,
        want,
        rule,
    }
}

const ALLOW_NPM_TEST: &str = r#"{"id":"allow-npm-test","action":"allow","tool":"exec_cmd","match":{"commandPrefix":"npm test"}}"#;
const DENY_CURL: &str = r#"{"id":"no-curl","action":"deny","tool":"exec_cmd","match":{"commandPrefix":"curl"},"description":"no network"}"#;
const DENY_ENV: &str =
    r#"{"id":"deny-env","action":"deny","tool":"*","match":{"pathGlob":"**/.env*"}}"#;
const ASK_GIT_STATUS: &str = r#"{"id":"ask-status","action":"ask","tool":"exec_cmd","match":{"commandPrefix":"git status"}}"#;
const ALLOW_ALL_EXEC: &str = r#"{"id":"allow-all-exec","action":"allow","tool":"Bash"}"#;
const ALLOW_WRITE_SRC: &str =
    r#"{"id":"allow-src","action":"allow","tool":"write_file","match":{"pathGlob":"src/**"}}"#;

#[test]
fn layered_rules_table() {
    let g = |r: &str| file(r);
    let mut cases = vec![
        case("global deny fires", &g(DENY_CURL), NONE, false, exec("curl https://x.example"), Verdict::Deny, Some(("no-curl", Layer::Global))),
        case("deny sees through wrappers", &g(DENY_CURL), NONE, false, exec("timeout 5 curl x"), Verdict::Deny, Some(("no-curl", Layer::Global))),
        case("deny sees inside substitutions", &g(DENY_CURL), NONE, false, exec("echo $(curl x)"), Verdict::Deny, Some(("no-curl", Layer::Global))),
        case("deny sees inside sh -c", &g(DENY_CURL), NONE, false, exec("sh -c 'curl x'"), Verdict::Deny, Some(("no-curl", Layer::Global))),
        case("untrusted project deny still applies", NONE, &g(DENY_CURL), false, exec("curl x"), Verdict::Deny, Some(("no-curl", Layer::Project))),
        case("untrusted project allow is ignored", NONE, &g(ALLOW_NPM_TEST), false, exec("npm test"), Verdict::Ask, None),
        case("trusted project allow applies", NONE, &g(ALLOW_NPM_TEST), true, exec("npm test"), Verdict::Allow, Some(("allow-npm-test", Layer::Project))),
        case("global allow applies", &g(ALLOW_NPM_TEST), NONE, false, exec("npm test -- --coverage"), Verdict::Allow, Some(("allow-npm-test", Layer::Global))),
        case("prefix is whole words", &g(ALLOW_NPM_TEST), NONE, false, exec("npm testx"), Verdict::Ask, None),
        case("allow must cover every part", &g(ALLOW_NPM_TEST), NONE, false, exec("npm test && touch x"), Verdict::Ask, None),
        case("allow does not cover a wrapper", &g(ALLOW_NPM_TEST), NONE, false, exec("sudo npm test"), Verdict::Ask, None),
        case("allow does not cover a substitution", &g(ALLOW_NPM_TEST), NONE, false, exec("npm test $(touch x)"), Verdict::Ask, None),
        case("project deny beats global allow", &g(ALLOW_ALL_EXEC), &g(DENY_CURL), false, exec("curl x"), Verdict::Deny, Some(("no-curl", Layer::Project))),
        case("path deny on a tool path", &g(DENY_ENV), NONE, false, read(".env"), Verdict::Deny, Some(("deny-env", Layer::Global))),
        case("path deny on a nested path", &g(DENY_ENV), NONE, false, read("app/.env.local"), Verdict::Deny, Some(("deny-env", Layer::Global))),
        case("path deny on a command argument", &g(DENY_ENV), NONE, false, exec("cat app/.env"), Verdict::Deny, Some(("deny-env", Layer::Global))),
        case("path deny leaves other paths", &g(DENY_ENV), NONE, false, read("env.md"), Verdict::Allow, None),
        case("ask rule beats safe", &g(ASK_GIT_STATUS), NONE, false, exec("git status"), Verdict::Ask, Some(("ask-status", Layer::Global))),
        case("catastrophic beats allow-all", &g(ALLOW_ALL_EXEC), NONE, false, exec("rm -rf ~"), Verdict::Deny, None),
        case("allow-all never covers a read outside", &g(ALLOW_ALL_EXEC), NONE, false, exec("cat /etc/shadow"), Verdict::Ask, None),
        case("path allow covers its folder", &g(ALLOW_WRITE_SRC), NONE, false, serde_json::json!({"name":"write_file","args":{"path":"src/a.rs","content":""}}).to_string(), Verdict::Allow, Some(("allow-src", Layer::Global))),
        case("path allow stops at its folder", &g(ALLOW_WRITE_SRC), NONE, false, serde_json::json!({"name":"write_file","args":{"path":"docs/a.md","content":""}}).to_string(), Verdict::Ask, None),
        case("shorthand allow", r#"{"version":1,"allow":["Bash(npm run lint *)"]}"#, NONE, false, exec("npm run lint --fix"), Verdict::Allow, Some(("Bash(npm run lint *)", Layer::Global))),
        case("shorthand Read deny covers grep", r#"{"version":1,"deny":["Read(secrets/**)"]}"#, NONE, false, serde_json::json!({"name":"grep","args":{"pattern":"x","path":"secrets/a"}}).to_string(), Verdict::Deny, Some(("Read(secrets/**) [grep]", Layer::Global))),
        case("protected path beats allow rule", r#"{"version":1,"allow":["Write"]}"#, NONE, false, serde_json::json!({"name":"write_file","args":{"path":".git/hooks/pre-commit","content":"x"}}).to_string(), Verdict::Deny, None),
        case("protected path via redirect", &g(ALLOW_ALL_EXEC), NONE, false, exec("echo x > .envrc"), Verdict::Deny, None),
    ];
    let mut managed = case(
        "managed deny beats global allow",
        &g(ALLOW_NPM_TEST),
        NONE,
        false,
        exec("npm test"),
        Verdict::Deny,
        Some(("m-no-npm", Layer::Managed)),
    );
    managed.managed =
        g(r#"{"id":"m-no-npm","action":"deny","tool":"exec_cmd","match":{"commandPrefix":"npm"}}"#);
    cases.push(managed);
    assert!(cases.len() >= 25);

    for c in cases {
        let f = Fixture::new();
        if !c.managed.is_empty() {
            f.put("managed/permissions.json", &c.managed);
        }
        if !c.global.is_empty() {
            f.put("config/ground-link/permissions.json", &c.global);
        }
        if !c.project.is_empty() {
            f.put("root/.ground-link/permissions.json", &c.project);
        }
        let engine = f.denying();
        if c.trust_project {
            engine.policy().trust_project().unwrap();
        }
        let d = check(&engine, &c.call);
        assert_eq!(
            d.decision,
            c.want,
            "{}: {}",
            c.name,
            serde_json::to_string(&d).unwrap()
        );
        if let Some((id, layer)) = c.rule {
            let r = d
                .rule
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no rule in {d:?}", c.name));
            assert_eq!((r.id.as_str(), r.layer), (id, layer), "{}", c.name);
        }
    }
}

#[test]
fn broken_and_hostile_files_never_loosen() {
    // Each file is refused; being broken since start-up, every call asks — even `ls`.
    let hostile = [
        ("not json", "{"),
        ("wrong version", r#"{"version":2,"rules":[]}"#),
        (
            "unknown field",
            r#"{"version":1,"rules":[],"allowEverything":true}"#,
        ),
        ("rules not an array", r#"{"version":1,"rules":"all"}"#),
        (
            "unknown tool",
            &file(r#"{"id":"x","action":"allow","tool":"rm_everything"}"#),
        ),
        (
            "unknown action",
            &file(r#"{"id":"x","action":"permit","tool":"*"}"#),
        ),
        (
            "prefix on a file tool",
            &file(
                r#"{"id":"x","action":"allow","tool":"read_file","match":{"commandPrefix":"cat"}}"#,
            ),
        ),
        (
            "duplicate ids",
            &file(&format!("{ALLOW_NPM_TEST},{ALLOW_NPM_TEST}")),
        ),
        (
            "bad glob",
            &file(r#"{"id":"x","action":"deny","tool":"*","match":{"pathGlob":"a[["}}"#),
        ),
        (
            "examples disagree",
            &file(
                r#"{"id":"x","action":"allow","tool":"exec_cmd","match":{"commandPrefix":"npm test"},"examples":{"match":["npm install"],"notMatch":[]}}"#,
            ),
        ),
        (
            "notMatch that matches",
            &file(
                r#"{"id":"x","action":"allow","tool":"exec_cmd","match":{"commandPrefix":"npm test"},"examples":{"match":["npm test"],"notMatch":["npm test -x"]}}"#,
            ),
        ),
        ("bad shorthand", r#"{"version":1,"allow":["Bash(npm"]}"#),
        ("array", "[]"),
        (
            "deep nesting",
            &format!("{}{}", "[".repeat(10000), "]".repeat(10000)),
        ),
    ];
    for (name, text) in hostile {
        let f = Fixture::new();
        f.put("config/ground-link/permissions.json", text);
        let engine = f.denying();
        let snap = engine.policy().snapshot();
        assert!(snap.global.error.is_some(), "{name}: accepted");
        let d = check(&engine, &exec("ls"));
        assert_eq!(d.decision, Verdict::Ask, "{name}: {d:?}");
        assert!(d.reason.contains("broken"), "{name}: {}", d.reason);
    }
    // Self-checking examples that agree load fine.
    let f = Fixture::new();
    f.put(
        "config/ground-link/permissions.json",
        &file(r#"{"id":"t","action":"allow","tool":"exec_cmd","match":{"commandPrefix":"npm test"},"examples":{"match":["npm test -- --coverage"],"notMatch":["npm testx","npm test; rm x"]}}"#),
    );
    let engine = f.denying();
    assert!(engine.policy().snapshot().global.error.is_none());
    assert_eq!(check(&engine, &exec("npm test")).decision, Verdict::Allow);
}

#[test]
fn a_broken_edit_keeps_the_last_good_rules() {
    let f = Fixture::new();
    let path = f.put("config/ground-link/permissions.json", &file(DENY_CURL));
    let engine = f.denying();
    assert_eq!(check(&engine, &exec("curl x")).decision, Verdict::Deny);
    std::fs::write(&path, "{ broken").unwrap();
    engine.policy().reload();
    let snap = engine.policy().snapshot();
    assert!(
        snap.global
            .error
            .as_deref()
            .unwrap_or("")
            .contains("invalid"),
        "{:?}",
        snap.global.error
    );
    assert!(snap.degraded().is_none(), "a last good version exists");
    assert_eq!(
        check(&engine, &exec("curl x")).decision,
        Verdict::Deny,
        "the deny must stay in force"
    );
    assert_eq!(check(&engine, &exec("ls")).decision, Verdict::Allow);
}

#[test]
fn project_trust_follows_content() {
    let f = Fixture::new();
    let path = f.put("root/.ground-link/permissions.json", &file(ALLOW_NPM_TEST));
    let engine = f.denying();
    assert_eq!(check(&engine, &exec("npm test")).decision, Verdict::Ask);
    engine.policy().trust_project().unwrap();
    assert_eq!(check(&engine, &exec("npm test")).decision, Verdict::Allow);
    // The agent (or a git pull) edits the file: its allows stop applying at once.
    std::fs::write(&path, file(&format!("{ALLOW_NPM_TEST},{ALLOW_ALL_EXEC}"))).unwrap();
    engine.policy().reload();
    assert_eq!(check(&engine, &exec("npm test")).decision, Verdict::Ask);
    assert_eq!(check(&engine, &exec("touch x")).decision, Verdict::Ask);
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "hot reload did not happen: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hot_reload_adds_and_revokes() {
    let f = Fixture::new();
    let mut config = f.config(SandboxMode::WorkspaceWrite, ApprovalMode::Ask);
    config.watch = true;
    let engine = ground_link::engine::Engine::new(
        config,
        Arc::new(ground_link::approval::DenyApprover { reason: None }),
    )
    .unwrap();
    assert_eq!(check(&engine, &exec("npm test")).decision, Verdict::Ask);
    // Add a global allow.
    let global = f.put("config/ground-link/permissions.json", &file(ALLOW_NPM_TEST));
    wait_for("global allow added", || {
        check(&engine, &exec("npm test")).decision == Verdict::Allow
    });
    // A project deny appears (its folder did not exist at start).
    f.put("root/.ground-link/permissions.json", &file(r#"{"id":"p-no-npm","action":"deny","tool":"exec_cmd","match":{"commandPrefix":"npm"}}"#));
    wait_for("project deny added", || {
        check(&engine, &exec("npm test")).decision == Verdict::Deny
    });
    std::fs::remove_file(f.root.join(".ground-link/permissions.json")).unwrap();
    wait_for("project deny revoked", || {
        check(&engine, &exec("npm test")).decision == Verdict::Allow
    });
    // Revoke the global allow.
    std::fs::write(&global, file("")).unwrap();
    wait_for("global allow revoked", || {
        check(&engine, &exec("npm test")).decision == Verdict::Ask
    });
}

/// Answers with a fixed scope and the proposed rule, and counts questions.
struct ScopedApprover {
    scope: Scope,
    asked: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl Approver for ScopedApprover {
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ApprovalAnswer::Allow {
            scope: self.scope,
            rule: Some(request.proposed_rule),
            network: false,
        }
    }
    fn name(&self) -> &'static str {
        "scoped-test"
    }
}

fn scoped(f: &Fixture, scope: Scope) -> (ground_link::engine::Engine, Arc<ScopedApprover>) {
    let approver = Arc::new(ScopedApprover {
        scope,
        asked: Default::default(),
    });
    let engine = f.engine_with(
        SandboxMode::WorkspaceWrite,
        ApprovalMode::Ask,
        approver.clone(),
    );
    (engine, approver)
}

fn exec_in(session: &str, cmd: &str) -> String {
    serde_json::json!({"name": "exec_cmd", "args": {"command": cmd}, "session": session})
        .to_string()
}

#[test]
fn scoped_answers_are_remembered_where_they_belong() {
    use std::sync::atomic::Ordering::SeqCst;
    // Session: the same conversation stops asking, another one still asks.
    let f = Fixture::new();
    let (engine, asked) = scoped(&f, Scope::Session);
    assert_eq!(
        call(&engine, &exec_in("chat-a", "touch a.txt")).status,
        CallStatus::Success
    );
    assert_eq!(
        call(&engine, &exec_in("chat-a", "touch b.txt")).status,
        CallStatus::Success
    );
    assert_eq!(
        asked.asked.load(SeqCst),
        1,
        "second call in the same chat asked again"
    );
    assert_eq!(
        check(&engine, &exec_in("chat-b", "touch c.txt")).decision,
        Verdict::Ask
    );

    // Project: the rule lands in the project file, which is trusted, and a new engine obeys it.
    let f = Fixture::new();
    let (engine, asked) = scoped(&f, Scope::Project);
    assert_eq!(
        call(&engine, &exec("touch a.txt")).status,
        CallStatus::Success
    );
    let text = std::fs::read_to_string(f.root.join(".ground-link/permissions.json")).unwrap();
    assert!(text.contains("\"commandPrefix\": \"touch\""), "{text}");
    assert_eq!(
        call(&engine, &exec("touch b.txt")).status,
        CallStatus::Success
    );
    assert_eq!(asked.asked.load(SeqCst), 1);
    assert_eq!(
        check(&f.denying(), &exec("touch c.txt")).decision,
        Verdict::Allow
    );

    // Project with unreviewed changes: the rule is appended but the file stays untrusted.
    let f = Fixture::new();
    f.put("root/.ground-link/permissions.json", &file(ALLOW_ALL_EXEC));
    let (engine, _) = scoped(&f, Scope::Project);
    assert_eq!(
        call(&engine, &exec("touch a.txt")).status,
        CallStatus::Success
    );
    assert!(
        !engine.policy().snapshot().project_trusted,
        "approving one rule trusted an attacker's file"
    );
    assert_eq!(
        check(&f.denying(), &exec("rm -r build")).decision,
        Verdict::Ask
    );

    // Global: the rule lands in the global file.
    let f = Fixture::new();
    let (engine, _) = scoped(&f, Scope::Global);
    assert_eq!(
        call(&engine, &exec("mkdir -p out")).status,
        CallStatus::Success
    );
    let text = std::fs::read_to_string(f.paths.global_rules()).unwrap();
    assert!(text.contains("\"commandPrefix\": \"mkdir\""), "{text}");
    assert_eq!(
        check(&f.denying(), &exec("mkdir other")).decision,
        Verdict::Allow
    );
}

#[test]
fn modes_and_sandboxes() {
    let f = Fixture::new();
    let auto = f.engine_with(
        SandboxMode::WorkspaceWrite,
        ApprovalMode::Auto,
        Arc::new(ground_link::approval::DenyApprover { reason: None }),
    );
    let write =
        serde_json::json!({"name":"write_file","args":{"path":"a.txt","content":"x"}}).to_string();
    assert_eq!(
        check(&auto, &write).decision,
        Verdict::Allow,
        "auto allows moderate"
    );
    assert_eq!(
        check(&auto, &exec("rm -r build")).decision,
        Verdict::Ask,
        "auto still asks for dangerous"
    );
    // The tray's toggle switches a running engine, both ways.
    auto.set_mode(ApprovalMode::Ask);
    assert_eq!(auto.mode(), ApprovalMode::Ask);
    assert_eq!(check(&auto, &write).decision, Verdict::Ask, "ask again");
    auto.set_mode(ApprovalMode::Auto);
    assert_eq!(check(&auto, &write).decision, Verdict::Allow, "auto again");
    let ro = f.engine_with(
        SandboxMode::ReadOnly,
        ApprovalMode::Auto,
        Arc::new(ground_link::approval::DenyApprover { reason: None }),
    );
    assert_eq!(check(&ro, &write).decision, Verdict::Deny);
    assert_eq!(check(&ro, &exec("touch x")).decision, Verdict::Deny);
    assert_eq!(check(&ro, &exec("ls -la")).decision, Verdict::Allow);
    let full = f.engine_with(
        SandboxMode::FullAccess,
        ApprovalMode::Auto,
        Arc::new(ground_link::approval::DenyApprover { reason: None }),
    );
    let hook = serde_json::json!({"name":"write_file","args":{"path":".git/hooks/pre-commit","content":"x"}}).to_string();
    let d = check(&full, &hook);
    assert_eq!(
        d.decision,
        Verdict::Ask,
        "full-access asks for protected paths even in auto: {d:?}"
    );
    assert_eq!(
        check(&full, &read("/etc/hostname")).decision,
        Verdict::Allow,
        "auto lets a moderate outside read through"
    );
    let full_ask = f.engine_with(
        SandboxMode::FullAccess,
        ApprovalMode::Ask,
        Arc::new(ground_link::approval::DenyApprover { reason: None }),
    );
    let d = check(&full_ask, &read("/etc/hostname"));
    assert_eq!(
        (d.decision, d.risk),
        (Verdict::Ask, ground_link::protocol::Risk::Moderate),
        "outside reads are never safe"
    );
}
