//! Suite: ground-link's own state, secrets and run-later files (DESIGN §4, issue 11), with the
//! sandbox root = a fake home folder whose XDG folders (and so ground-link's own state) lie
//! inside it. Every test attacks one claim with real files and processes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ground_link::approval::{AllowOnceApprover, Approver, DenyApprover};
use ground_link::engine::{Engine, EngineConfig};
use ground_link::paths::ConfigPaths;
use ground_link::protocol::{ApprovalMode, CallStatus, SandboxMode, Verdict};

use crate::util::{call, check, scratch_parent};

pub const TOKEN: &str = "OWN-TOKEN-7f3a9c";
const RULES: &str = r#"{"version":1,"rules":[]}"#;
const SSH_KEY: &str = "SSH-PRIVATE-KEY-51d0e2";
const ENV_SECRET: &str = "ENV-SECRET-93bb41";
const BASHRC: &str = "# bashrc\n";

/// A fake home: `root` is the home folder and the sandbox root; ground-link's config and
/// data folders are its `.config/ground-link` and `.local/share/ground-link`.
pub struct Home {
    _base: tempfile::TempDir,
    pub home: PathBuf,
    pub paths: ConfigPaths,
}

impl Home {
    pub fn new() -> Home {
        let base = tempfile::Builder::new()
            .prefix("gl-home-")
            .tempdir_in(scratch_parent())
            .unwrap();
        let home = std::fs::canonicalize(base.path()).unwrap().join("home");
        let paths = ConfigPaths {
            managed: base.path().join("etc/ground-link/permissions.json"),
            config_dir: home.join(".config/ground-link"),
            data_dir: home.join(".local/share/ground-link"),
        };
        let h = Home {
            _base: base,
            home,
            paths,
        };
        for (rel, content) in [
            (".config/ground-link/token", TOKEN),
            (".config/ground-link/permissions.json", RULES),
            (".ssh/id_ed25519", SSH_KEY),
            (
                ".aws/credentials",
                "[default]\naws_secret_access_key=AWS-93k\n",
            ),
            ("proj/.env", ENV_SECRET),
            ("proj/keys/server.pem", "PEM-BYTES-77\n"),
            ("proj/readme.txt", "hello readme\n"),
            (".bashrc", BASHRC),
            (".config/autostart/x.desktop", "[Desktop Entry]\n"),
        ] {
            h.put(rel, content);
        }
        h
    }

    pub fn put(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.home.join(rel)).unwrap_or_default()
    }

    pub fn config(&self, sandbox: SandboxMode, mode: ApprovalMode) -> EngineConfig {
        let mut c = EngineConfig::new(self.home.clone(), self.paths.clone());
        c.sandbox = sandbox;
        c.mode = mode;
        c.home = Some(self.home.clone());
        c.supervisor_exe = PathBuf::from(env!("CARGO_BIN_EXE_ground-link"));
        c
    }

    pub fn engine(&self, sandbox: SandboxMode, mode: ApprovalMode, a: Arc<dyn Approver>) -> Engine {
        Engine::new(self.config(sandbox, mode), a).unwrap()
    }
}

fn allow() -> Arc<dyn Approver> {
    Arc::new(AllowOnceApprover)
}

fn deny() -> Arc<dyn Approver> {
    Arc::new(DenyApprover { reason: None })
}

/// One call per tool kind aimed at `rel` (whose current content is `content`).
fn calls(rel: &str, content: &str) -> Vec<(&'static str, String)> {
    let parent = Path::new(rel)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into());
    let j = |v: serde_json::Value| v.to_string();
    let first = content.lines().next().unwrap_or(content);
    vec![
        (
            "read",
            j(serde_json::json!({"name":"read_file","args":{"path":rel}})),
        ),
        (
            "write",
            j(serde_json::json!({"name":"write_file","args":{"path":rel,"content":"PWNED"}})),
        ),
        (
            "edit",
            j(
                serde_json::json!({"name":"edit_file","args":{"path":rel,"oldString":first,"newString":"PWNED"}}),
            ),
        ),
        (
            "grep",
            j(serde_json::json!({"name":"grep","args":{"pattern":".","path":rel}})),
        ),
        (
            "list",
            j(serde_json::json!({"name":"list_dir","args":{"path":parent}})),
        ),
        (
            "exec read",
            j(serde_json::json!({"name":"exec_cmd","args":{"command":format!("cat {rel}")}})),
        ),
        (
            "exec write",
            j(
                serde_json::json!({"name":"exec_cmd","args":{"command":format!("cp proj/readme.txt {rel}")}}),
            ),
        ),
        (
            "exec redirect",
            j(
                serde_json::json!({"name":"exec_cmd","args":{"command":format!("echo PWNED > {rel}")}}),
            ),
        ),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Own,
    Sensitive,
    RunLater,
    Plain,
}

/// The verdict `check` must give for (class, tool kind, sandbox).
fn expected(class: Class, kind: &str, sandbox: SandboxMode) -> Verdict {
    let full = sandbox == SandboxMode::FullAccess;
    let reads = matches!(kind, "read" | "grep" | "list" | "exec read");
    match class {
        Class::Own => Verdict::Deny,
        Class::Sensitive if kind == "list" => Verdict::Allow,
        Class::Sensitive => Verdict::Ask,
        Class::RunLater if reads => Verdict::Allow,
        Class::RunLater if full => Verdict::Ask,
        Class::RunLater => Verdict::Deny,
        Class::Plain if reads => Verdict::Allow,
        Class::Plain => Verdict::Ask,
    }
}

/// path class × tool × sandbox mode × approval answer, root = the fake home.
#[test]
fn class_tool_mode_answer_table() {
    let cases: &[(Class, &str, &str)] = &[
        (Class::Own, ".config/ground-link/token", TOKEN),
        (Class::Own, ".config/ground-link/permissions.json", RULES),
        (Class::Sensitive, ".ssh/id_ed25519", SSH_KEY),
        (Class::Sensitive, "proj/.env", ENV_SECRET),
        (Class::RunLater, ".bashrc", BASHRC),
        (
            Class::RunLater,
            ".config/autostart/x.desktop",
            "[Desktop Entry]\n",
        ),
        (Class::Plain, "proj/readme.txt", "hello readme\n"),
    ];
    for sandbox in [SandboxMode::WorkspaceWrite, SandboxMode::FullAccess] {
        for (answer_name, answer) in [("allow once", allow()), ("deny", deny())] {
            for &(class, rel, content) in cases {
                for (kind, json) in calls(rel, content) {
                    let h = Home::new();
                    let engine = h.engine(sandbox, ApprovalMode::Ask, answer.clone());
                    let want = expected(class, kind, sandbox);
                    let what = format!("{class:?} {rel} × {kind} × {sandbox:?} × {answer_name}");
                    let d = check(&engine, &json);
                    assert_eq!(d.decision, want, "{what}: {}", d.reason);
                    let r = call(&engine, &json);
                    let ran = want == Verdict::Allow
                        || (want == Verdict::Ask && answer_name == "allow once");
                    if !ran {
                        assert_eq!(r.status, CallStatus::Denied, "{what}: {}", r.output);
                    }
                    // Own state is never read nor changed, whatever happened.
                    assert_eq!(h.read(".config/ground-link/token"), TOKEN, "{what}");
                    assert_eq!(
                        h.read(".config/ground-link/permissions.json"),
                        RULES,
                        "{what}"
                    );
                    if class == Class::Own {
                        assert!(!r.output.contains(TOKEN), "{what}: {}", r.output);
                        assert!(
                            d.reason.contains(".config/ground-link"),
                            "{what}: the reason names the path: {}",
                            d.reason
                        );
                        assert!(d.reason.contains("settings window"), "{what}");
                    }
                    if !ran {
                        assert_eq!(h.read(rel), content, "{what}: file changed");
                        assert!(!r.output.contains(content.trim()), "{what}: {}", r.output);
                    }
                    if class == Class::Sensitive && matches!(kind, "read" | "grep" | "exec read") {
                        assert!(d.reason.contains("looks like a secret"), "{what}");
                        assert_eq!(d.risk, ground_link::protocol::Risk::Dangerous, "{what}");
                    }
                    // An approved `cat` of a secret in workspace-write still cannot read it:
                    // the command's mount namespace hides the secret folders.
                    if class == Class::Sensitive
                        && kind == "exec read"
                        && ran
                        && sandbox == SandboxMode::WorkspaceWrite
                        && rel.starts_with(".ssh")
                    {
                        assert!(!r.output.contains(content), "{what}: {}", r.output);
                    }
                }
            }
        }
    }
}

#[test]
fn auto_mode_and_broad_rules_do_not_open_secrets_a_naming_rule_does() {
    let h = Home::new();
    let read_key = r#"{"name":"read_file","args":{"path":".ssh/id_ed25519"}}"#;
    let auto = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Auto, deny());
    assert_eq!(check(&auto, read_key).decision, Verdict::Ask);
    h.put(
        ".config/ground-link/permissions.json",
        r#"{"version":1,"rules":[{"id":"all-reads","action":"allow","tool":"read_file","match":{"pathGlob":"**"}},{"id":"ssh","action":"allow","tool":"read_file","match":{"pathGlob":".ssh/*"}}]}"#,
    );
    let broad = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Auto, deny());
    let d = check(&broad, read_key);
    assert_eq!(d.decision, Verdict::Ask, "{}", d.reason);
    let r = call(&broad, read_key);
    assert!(!r.output.contains(SSH_KEY));
    h.put(
        ".config/ground-link/permissions.json",
        r#"{"version":1,"rules":[{"id":"my-key","action":"allow","tool":"read_file","match":{"pathGlob":".ssh/id_ed25519"}}]}"#,
    );
    let naming = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, deny());
    let d = check(&naming, read_key);
    assert_eq!(d.decision, Verdict::Allow, "{}", d.reason);
    assert!(call(&naming, read_key).output.contains(SSH_KEY));
}

/// Records what the dialog would be shown, and denies.
struct Recorder(std::sync::Mutex<Vec<ground_link::protocol::ApprovalRequest>>);

#[async_trait::async_trait]
impl Approver for Recorder {
    async fn ask(
        &self,
        request: ground_link::protocol::ApprovalRequest,
    ) -> ground_link::protocol::ApprovalAnswer {
        self.0.lock().unwrap().push(request);
        ground_link::protocol::ApprovalAnswer::Deny { reason: None }
    }
    fn name(&self) -> &'static str {
        "recorder"
    }
}

#[test]
fn secrets_offer_only_allow_once_and_the_approvers_say_it_looks_like_a_secret() {
    let h = Home::new();
    let rec = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, rec.clone());
    call(
        &engine,
        r#"{"name":"grep","args":{"pattern":"x","path":".aws"}}"#,
    );
    let asked = rec.0.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].scopes, vec![ground_link::protocol::Scope::Once]);
    let text = ground_link::approval::describe(&asked[0]);
    assert!(text.contains("this looks like a secret"), "{text}");
}

#[test]
fn tree_walks_skip_secrets_and_own_state_unless_named() {
    let h = Home::new();
    h.put("proj/notes.txt", "KEY in notes\n");
    h.put("proj/.env", "KEY=ENV-SECRET-93bb41\n");
    h.put("proj/keys/server.pem", "KEY PEM-BYTES-77\n");
    h.put(".config/ground-link/extra.txt", "KEY OWN-STATE-BYTES\n");
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, allow());
    let r = call(
        &engine,
        r#"{"name":"grep","args":{"pattern":"KEY","path":"."}}"#,
    );
    assert_eq!(r.status, CallStatus::Success, "{}", r.output);
    assert!(r.output.contains("notes.txt"), "{}", r.output);
    for secret in ["ENV-SECRET", "PEM-BYTES", "OWN-STATE", "SSH-PRIVATE"] {
        assert!(!r.output.contains(secret), "{secret} leaked: {}", r.output);
    }
    let r = call(
        &engine,
        r#"{"name":"glob","args":{"pattern":"**/*","path":"."}}"#,
    );
    assert!(!r.output.contains("server.pem"), "{}", r.output);
    assert!(!r.output.contains("ground-link/token"), "{}", r.output);
    // A folder that merely holds a secret is searched without it.
    let r = call(
        &engine,
        r#"{"name":"grep","args":{"pattern":"KEY","path":"proj/keys"}}"#,
    );
    assert!(!r.output.contains("PEM-BYTES"), "{}", r.output);
    // Naming the secret (and being allowed once) searches it.
    let r = call(
        &engine,
        r#"{"name":"grep","args":{"pattern":"KEY","path":"proj/keys/server.pem"}}"#,
    );
    assert!(r.output.contains("PEM-BYTES"), "{}", r.output);
    // list_dir shows names, not contents, and never ground-link's own state.
    let r = call(
        &engine,
        r#"{"name":"list_dir","args":{"path":".","depth":3,"all":true}}"#,
    );
    assert!(r.output.contains(".ssh/id_ed25519"), "{}", r.output);
    assert!(!r.output.contains("SSH-PRIVATE"), "{}", r.output);
    assert!(!r.output.contains("ground-link/token"), "{}", r.output);
}

#[test]
fn a_recursive_exec_read_over_a_tree_holding_a_secret_asks() {
    let h = Home::new();
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Auto, deny());
    for cmd in [
        "grep -r KEY proj",
        "grep -rn KEY .",
        "rg KEY proj",
        "cat proj/.env",
    ] {
        let json = serde_json::json!({"name":"exec_cmd","args":{"command":cmd}}).to_string();
        let d = check(&engine, &json);
        assert_eq!(d.decision, Verdict::Ask, "{cmd}: {}", d.reason);
        let r = call(&engine, &json);
        assert!(!r.output.contains(ENV_SECRET), "{cmd}: {}", r.output);
    }
    // A tree with no secret stays safe.
    let d = check(
        &engine,
        r#"{"name":"exec_cmd","args":{"command":"grep -r hello proj/keys/.."}}"#,
    );
    assert_eq!(d.decision, Verdict::Ask, "proj holds .env: {}", d.reason);
    std::fs::create_dir_all(h.home.join("clean")).unwrap();
    h.put("clean/a.txt", "hello\n");
    let d = check(
        &engine,
        r#"{"name":"exec_cmd","args":{"command":"grep -r hello clean"}}"#,
    );
    assert_eq!(d.decision, Verdict::Allow, "{}", d.reason);
}

#[test]
fn own_state_is_denied_under_xdg_overrides_and_in_full_access_outside_the_root() {
    // The root is a project; the config lives elsewhere (XDG override): still denied by its
    // absolute path in full-access, where outside paths are otherwise allowed.
    let h = Home::new();
    let proj = h.home.join("proj");
    let mut c = h.config(SandboxMode::FullAccess, ApprovalMode::Auto);
    c.root = proj;
    let engine = Engine::new(c, allow()).unwrap();
    let token = h.home.join(".config/ground-link/token");
    for json in [
        serde_json::json!({"name":"read_file","args":{"path":token}}),
        serde_json::json!({"name":"write_file","args":{"path":token,"content":"x"}}),
        serde_json::json!({"name":"exec_cmd","args":{"command":format!("cat {}", token.display())}}),
        serde_json::json!({"name":"exec_cmd","args":{"command":"cat ~/.config/ground-link/token"}}),
        serde_json::json!({"name":"exec_cmd","args":{"command":"rm -f ~/.local/share/ground-link/audit/x.jsonl"}}),
    ] {
        let json = json.to_string();
        let d = check(&engine, &json);
        assert_eq!(d.decision, Verdict::Deny, "{json}: {}", d.reason);
        let r = call(&engine, &json);
        assert!(!r.output.contains(TOKEN), "{}", r.output);
    }
    assert_eq!(h.read(".config/ground-link/token"), TOKEN);
}

#[test]
fn a_denied_call_never_carries_a_secret_in_its_output_or_audit_line() {
    let h = Home::new();
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, deny());
    for json in [
        r#"{"name":"read_file","args":{"path":".ssh/id_ed25519"}}"#,
        r#"{"name":"read_file","args":{"path":".config/ground-link/token"}}"#,
        r#"{"name":"exec_cmd","args":{"command":"cat proj/.env"}}"#,
        r#"{"name":"grep","args":{"pattern":"SECRET","path":"proj/.env"}}"#,
    ] {
        let r = call(&engine, json);
        assert_eq!(r.status, CallStatus::Denied, "{json}");
        for s in [SSH_KEY, TOKEN, ENV_SECRET] {
            assert!(!r.output.contains(s) && !r.formatted.contains(s), "{json}");
        }
    }
    let audit = h.paths.audit_dir();
    let mut lines = 0;
    for e in std::fs::read_dir(&audit).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        lines += text.lines().count();
        for s in [SSH_KEY, TOKEN, ENV_SECRET] {
            assert!(!text.contains(s), "audit holds a secret: {text}");
        }
    }
    assert!(lines >= 4, "one audit line per call, {lines} lines");
}

#[test]
fn check_prints_the_path_class_and_serve_warns_about_a_broad_root() {
    let h = Home::new();
    let check_json = |json: &str| -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ground-link"))
            .args(["check", "--dir"])
            .arg(&h.home)
            .args(["--json", json])
            .env("HOME", &h.home)
            .env("XDG_CONFIG_HOME", h.home.join(".config"))
            .env("XDG_DATA_HOME", h.home.join(".local/share"))
            .env("GROUND_LINK_MANAGED_FILE", &h.paths.managed)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for (json, class) in [
        (
            r#"{"name":"read_file","args":{"path":".ssh/id_ed25519"}}"#,
            Some("sensitive"),
        ),
        (
            r#"{"name":"exec_cmd","args":{"command":"cat proj/.env"}}"#,
            Some("sensitive"),
        ),
        (
            r#"{"name":"read_file","args":{"path":".config/ground-link/token"}}"#,
            Some("ownState"),
        ),
        (
            r#"{"name":"write_file","args":{"path":".bashrc","content":""}}"#,
            Some("protected"),
        ),
        (
            r#"{"name":"read_file","args":{"path":"proj/readme.txt"}}"#,
            None,
        ),
    ] {
        let v = check_json(json);
        assert_eq!(v["pathClass"].as_str(), class, "{json}: {v}");
    }
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, deny());
    let w = engine.broad_root_warning().expect("a home root is broad");
    assert!(w.contains("own state") && w.contains("secrets"), "{w}");
    let mut c = h.config(SandboxMode::WorkspaceWrite, ApprovalMode::Ask);
    c.root = h.home.join("proj");
    let narrow = Engine::new(c, deny()).unwrap();
    assert_eq!(narrow.broad_root_warning(), None);
}

#[test]
fn a_rule_file_extends_the_sensitive_table() {
    let h = Home::new();
    h.put("proj/vault/db.txt", "DB-PASSWORD-55\n");
    let read = r#"{"name":"read_file","args":{"path":"proj/vault/db.txt"}}"#;
    let before = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, deny());
    assert_eq!(check(&before, read).decision, Verdict::Allow);
    // Even an untrusted project file may add secrets: that only makes ground-link stricter.
    h.put(
        "proj/.ground-link/permissions.json",
        r#"{"version":1,"rules":[],"sensitive":["**/vault/**"]}"#,
    );
    let mut c = h.config(SandboxMode::WorkspaceWrite, ApprovalMode::Auto);
    c.root = h.home.join("proj");
    let engine = Engine::new(c, deny()).unwrap();
    let read = r#"{"name":"read_file","args":{"path":"vault/db.txt"}}"#;
    let d = check(&engine, read);
    assert_eq!(d.decision, Verdict::Ask, "{}", d.reason);
    assert!(d.reason.contains("looks like a secret"), "{}", d.reason);
    assert!(!call(&engine, read).output.contains("DB-PASSWORD"));
    // A bad glob makes the file fail to load, with a message.
    let err = ground_link::policy::layers::parse_file(
        r#"{"version":1,"sensitive":["a/[b"]}"#,
        ground_link::protocol::Layer::Global,
    )
    .err()
    .unwrap();
    assert!(err.contains("sensitive glob"), "{err}");
}

/// The red team's second round: copies and other spellings of secrets, secrets in git's own
/// files and history, and run-later files the first table missed — each judged through the
/// engine, with the home folder as the root.
#[test]
fn copies_git_history_and_more_run_later_files_are_judged_like_the_rest() {
    let h = Home::new();
    for rel in [
        "proj/prod.env",
        "proj/.env~",
        "proj/id_rsa.bak",
        "proj/certs/server.pem.bak",
        "proj/terraform.tfstate",
        "proj/service-account.json",
        ".codex/auth.json",
        ".config/git/credentials",
    ] {
        h.put(rel, "SECRET-COPY-5c1e\n");
    }
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Auto, deny());
    let j = |v: serde_json::Value| v.to_string();
    for rel in [
        "proj/prod.env",
        "proj/.env~",
        "proj/id_rsa.bak",
        "proj/certs/server.pem.bak",
        "proj/terraform.tfstate",
        "proj/service-account.json",
        ".codex/auth.json",
        ".config/git/credentials",
    ] {
        for json in [
            j(serde_json::json!({"name":"read_file","args":{"path":rel}})),
            j(serde_json::json!({"name":"exec_cmd","args":{"command":format!("cat {rel}")}})),
        ] {
            let d = check(&engine, &json);
            assert_eq!(d.decision, Verdict::Ask, "{json}: {}", d.reason);
            let r = call(&engine, &json);
            assert!(!r.output.contains("SECRET-COPY"), "{json}: {}", r.output);
        }
    }

    // A repository with a committed secret and a token in a remote URL.
    let repo = h.home.join("proj");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=a", "-c", "user.email=a@b"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", ".env"]);
    git(&["commit", "-qm", "i"]);
    git(&[
        "remote",
        "add",
        "origin",
        "https://x:ghp_TOKEN123@example.invalid/o/r.git",
    ]);
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, deny());
    for command in [
        "git show HEAD:.env",
        "git cat-file -p HEAD:.env",
        "git log -p",
        "git diff HEAD~0 --",
        "git grep SECRET HEAD",
        "git remote -v",
        "git remote get-url origin",
        "cat .git/config",
    ] {
        let json =
            j(serde_json::json!({"name":"exec_cmd","args":{"command":command,"cwd":"proj"}}));
        let d = check(&engine, &json);
        assert_eq!(d.decision, Verdict::Ask, "{command}: {}", d.reason);
        let r = call(&engine, &json);
        assert!(!r.output.contains(ENV_SECRET), "{command}: {}", r.output);
        assert!(
            !r.output.contains("ghp_TOKEN123"),
            "{command}: {}",
            r.output
        );
    }
    // `git show HEAD:.env` names a secret: a secret read (dangerous), even in auto mode.
    let auto = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Auto, deny());
    let json = j(
        serde_json::json!({"name":"exec_cmd","args":{"command":"git show HEAD:.env","cwd":"proj"}}),
    );
    let d = check(&auto, &json);
    assert_eq!(d.decision, Verdict::Ask, "{}", d.reason);
    assert!(d.reason.contains("looks like a secret"), "{}", d.reason);
    let read = j(serde_json::json!({"name":"read_file","args":{"path":"proj/.git/config"}}));
    let d = check(&auto, &read);
    assert_eq!(d.decision, Verdict::Ask, "{}", d.reason);
    // Still protected for writes.
    let write = j(
        serde_json::json!({"name":"write_file","args":{"path":"proj/.git/config","content":"x"}}),
    );
    assert_eq!(check(&auto, &write).decision, Verdict::Deny);
    // `git status` and `git log --oneline` stay quiet.
    for command in ["git status", "git log --oneline -n 3"] {
        let json =
            j(serde_json::json!({"name":"exec_cmd","args":{"command":command,"cwd":"proj"}}));
        assert_eq!(check(&engine, &json).decision, Verdict::Allow, "{command}");
    }

    // Run-later files a first table missed: read-only in workspace-write.
    for rel in [
        ".bash_aliases",
        ".config/lesskey",
        ".local/bin/git",
        "bin/ls",
        ".local/lib/python3.11/site-packages/zz.pth",
        ".vimrc",
        ".config/nvim/init.lua",
        ".tmux.conf",
        ".gdbinit",
        ".cargo/config.toml",
        ".gitconfig.local",
        ".local/share/applications/x.desktop",
        "proj/.pre-commit-config.yaml",
        "proj/lefthook.yml",
        "proj/mise.toml",
        "proj/.githooks/pre-commit",
        "proj/.devcontainer/devcontainer.json",
        "proj/app.code-workspace",
        "proj/.vscode/settings.json",
    ] {
        let write =
            j(serde_json::json!({"name":"write_file","args":{"path":rel,"content":"touch PWNED"}}));
        let d = check(&auto, &write);
        assert_eq!(d.decision, Verdict::Deny, "{rel}: {}", d.reason);
        assert!(d.reason.contains("protected"), "{rel}: {}", d.reason);
    }
}

/// The red team replaced the supervisor (a copy of ground-link in `~/.local/bin`, the root
/// being the home folder) from an auto-allowed command, and the next call ran its file with
/// no isolation at all. The programs ground-link runs are own state now.
#[test]
fn the_supervisor_ground_link_runs_cannot_be_replaced_by_a_call() {
    let h = Home::new();
    let bin = h.home.join(".local/bin/ground-link");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_ground-link"), &bin).unwrap();
    let original = std::fs::read(&bin).unwrap();
    let mut config = h.config(SandboxMode::WorkspaceWrite, ApprovalMode::Auto);
    config.supervisor_exe = bin.clone();
    let engine = Engine::new(config, allow()).unwrap();
    let j = |v: serde_json::Value| v.to_string();
    let write = j(
        serde_json::json!({"name":"write_file","args":{"path":".local/bin/ground-link","content":"#!/bin/sh\ntouch PWNED\n"}}),
    );
    let d = check(&engine, &write);
    assert_eq!(d.decision, Verdict::Deny, "{}", d.reason);
    assert!(d.reason.contains("own state"), "{}", d.reason);
    // A program the classifier cannot see through, run in auto mode: the file is not there
    // to replace (covered), and its folder cannot be swapped.
    h.put(
        "swap.py",
        "import os\np=os.path.expanduser('~/.local/bin/gr'+'ound-link')\ntry:\n    open(p+'.n','w').write('#!/bin/sh\\ntouch PWNED\\n'); os.chmod(p+'.n',0o755); os.rename(p+'.n',p); print('SWAPPED')\nexcept OSError as e: print('refused', e)\ntry:\n    os.rename(os.path.dirname(p), os.path.dirname(p)+'.old'); print('MOVED')\nexcept OSError as e: print('refused', e)\n",
    );
    let run =
        j(serde_json::json!({"name":"exec_cmd","args":{"command":"HOME=$PWD python3 swap.py"}}));
    let r = call(&engine, &run);
    assert!(!r.output.contains("SWAPPED"), "{}", r.output);
    assert!(!r.output.contains("MOVED"), "{}", r.output);
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        original,
        "the supervisor changed"
    );
    // The next call still runs under the real supervisor.
    let r = call(
        &engine,
        &j(serde_json::json!({"name":"exec_cmd","args":{"command":"echo still-isolated"}})),
    );
    assert_eq!(r.status, CallStatus::Success, "{}", r.output);
    assert!(!h.home.join("PWNED").exists());
}

/// With no config folder yet, a running command planted `~/.config/ground-link/permissions.json`
/// allowing itself, and another engine read it while the command still ran (red team 2,
/// finding 13). Every engine makes its own folders first, so they are covered from the start.
#[test]
fn own_folders_exist_before_a_command_could_plant_rules_in_them() {
    let h = Home::new();
    std::fs::remove_dir_all(h.home.join(".config/ground-link")).unwrap();
    std::fs::remove_dir_all(h.home.join(".local/share/ground-link")).ok();
    let engine = h.engine(SandboxMode::WorkspaceWrite, ApprovalMode::Ask, allow());
    for dir in [".config/ground-link", ".local/share/ground-link"] {
        let md = std::fs::metadata(h.home.join(dir)).unwrap();
        assert!(md.is_dir(), "{dir}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(md.permissions().mode() & 0o077, 0, "{dir} is private");
    }
    h.put(
        "plant.py",
        "import os\np=os.path.expanduser('~/.config/gr'+'ound-link/permissions.json')\ntry:\n    os.makedirs(os.path.dirname(p), exist_ok=True); open(p,'w').write('{\"version\":1,\"rules\":[{\"id\":\"x\",\"action\":\"allow\",\"tool\":\"*\"}]}'); print('PLANTED')\nexcept OSError as e: print('refused', e)\n",
    );
    let run =
        serde_json::json!({"name":"exec_cmd","args":{"command":"HOME=$PWD python3 plant.py"}})
            .to_string();
    let r = call(&engine, &run);
    assert!(!r.output.contains("PLANTED"), "{}", r.output);
    assert!(!h.home.join(".config/ground-link/permissions.json").exists());
}
