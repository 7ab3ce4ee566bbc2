//! PreToolUse / PostToolUse hooks (DESIGN §5.5).
//!
//! A hook is a user's shell command that sees a call before it runs (pre) or after (post) and
//! may stop it. Guarantees:
//! - **A hook can block an allowed call; it can never allow a denied one.** The engine only runs
//!   hooks for calls it already allowed, and [`run_hooks`] can only answer "continue" or "block".
//!   In the post phase the call has already run: a block there tells the engine to withhold the
//!   output.
//! - **Fail closed.** Exit 0 continues; exit 2 always blocks, with the hook's stderr as the
//!   reason; any other exit, a signal, a spawn failure or a timeout blocks too unless the hook
//!   says `onFailure: "skip"`.
//! - **No leftovers.** Each hook runs as `/bin/sh -c <command>` in its own process group, in the
//!   sandbox root. On timeout, or when the caller drops the future, the whole group is killed;
//!   after a normal exit, processes it left behind holding its stderr are killed as well.
//!
//! What a hook sees: the environment variables `TOOL_NAME`, `TOOL_CALL_ID`, `TOOL_INPUT_JSON`,
//! `TOOL_INPUT_COMMAND` (`args.command` or empty), `TOOL_INPUT_PATH` (`args.path` or empty),
//! `TOOL_OUTPUT` (post only) and `WORKSPACE_PATH`, and on stdin the JSON object
//! `{"tool", "callId", "args", "phase", "output"?}`. The environment has a size limit, so values
//! longer than [`ENV_VALUE_CAP`] bytes are cut (`TOOL_INPUT_JSON` is replaced by its summary, see
//! [`crate::audit::summarize_args`]) and `TOOL_INPUT_TRUNCATED` lists the variables affected;
//! stdin always carries the full arguments. NUL characters, which an environment cannot hold,
//! become U+FFFD there.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::protocol::{Hook, OnFailure, ToolName};

/// Longest value put into one environment variable (Linux allows 128 KiB per string).
pub const ENV_VALUE_CAP: usize = 64 * 1024;
/// Longest tool output put on a hook's stdin.
pub const STDIN_OUTPUT_CAP: usize = 1024 * 1024;
/// Longest block reason kept from a hook's stderr.
pub const REASON_CAP: usize = 4 * 1024;
/// How long a hook that exited may keep its stderr open (a background child) before its
/// process group is killed.
const LINGER_GRACE: Duration = Duration::from_millis(200);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPhase {
    Pre,
    Post,
}

impl HookPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            HookPhase::Pre => "pre",
            HookPhase::Post => "post",
        }
    }
}

/// The call the hooks look at.
#[derive(Debug, Clone, Copy)]
pub struct HookContext<'a> {
    pub tool: ToolName,
    pub call_id: &'a str,
    pub args: &'a Map<String, Value>,
    /// The sandbox root: the hooks' working directory and `WORKSPACE_PATH`.
    pub root: &'a Path,
    /// The tool's output; post phase only.
    pub output: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    Continue,
    Block { hook_id: String, reason: String },
}

/// A hook that failed but was configured with `onFailure: "skip"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedHook {
    pub hook_id: String,
    /// What went wrong, e.g. `exited with status 1: <stderr>`.
    pub failure: String,
}

/// [`HookOutcome`] plus the failures that were skipped, for the audit log's note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookReport {
    pub outcome: HookOutcome,
    pub skipped: Vec<SkippedHook>,
}

/// A `toolMatch` value the config loader should reject: a hook that silently never runs is a
/// check the user thinks they have and do not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookConfigError {
    #[error(
        "hook {hook_id:?}: toolMatch {tool_match:?} names {name:?}, which is not a tool; use \"*\", a tool name such as \"exec_cmd\", an alias such as \"Bash\", or several joined with \"|\""
    )]
    UnknownTool {
        hook_id: String,
        tool_match: String,
        name: String,
    },
    #[error("hook {hook_id:?}: command is empty; give the shell command to run")]
    EmptyCommand { hook_id: String },
    #[error(
        "hook {hook_id:?}: timeout is 0 ms, so it could never finish; use a positive number of milliseconds (default 5000)"
    )]
    ZeroTimeout { hook_id: String },
}

/// Checks a hook as it is loaded from a permission file.
pub fn check_hook(hook: &Hook) -> Result<(), HookConfigError> {
    for name in hook.tool_match.split('|').map(str::trim) {
        if name != "*" && ToolName::from_alias(name).is_none() {
            return Err(HookConfigError::UnknownTool {
                hook_id: hook.id.clone(),
                tool_match: hook.tool_match.clone(),
                name: name.to_string(),
            });
        }
    }
    if hook.command.trim().is_empty() {
        return Err(HookConfigError::EmptyCommand {
            hook_id: hook.id.clone(),
        });
    }
    if hook.timeout == 0 {
        return Err(HookConfigError::ZeroTimeout {
            hook_id: hook.id.clone(),
        });
    }
    Ok(())
}

/// Whether `hook` applies to `tool`: its `toolMatch` is `*`, the tool's name or an alias
/// ([`ToolName::from_alias`]), or a `|`-separated list of those.
pub fn hook_matches(hook: &Hook, tool: ToolName) -> bool {
    hook.tool_match
        .split('|')
        .map(str::trim)
        .any(|name| name == "*" || ToolName::from_alias(name) == Some(tool))
}

/// What trying one hook found (the settings window's "run now").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    /// Whether the hook would block the call.
    pub blocked: bool,
    /// What happened, in one sentence.
    pub summary: String,
}

/// Try `hook` as a PreToolUse hook on a harmless sample call (`{"path": "."}` for the first
/// tool it names, `list_dir` for `*`) in `root`, and say whether it would block.
pub async fn try_hook(hook: &Hook, root: &Path) -> Result<HookRun, HookConfigError> {
    check_hook(hook)?;
    let tool = hook
        .tool_match
        .split('|')
        .map(str::trim)
        .find_map(ToolName::from_alias)
        .unwrap_or(ToolName::ListDir);
    let args = Map::from_iter([("path".to_string(), json!("."))]);
    let ctx = HookContext {
        tool,
        call_id: "run-now",
        args: &args,
        root,
        output: None,
    };
    let report = run_hooks_report(HookPhase::Pre, std::slice::from_ref(hook), &ctx).await;
    let skipped: Vec<String> = report.skipped.into_iter().map(|s| s.failure).collect();
    Ok(match report.outcome {
        HookOutcome::Block { reason, .. } => HookRun {
            blocked: true,
            summary: format!("it would block the call: {reason}"),
        },
        HookOutcome::Continue if !skipped.is_empty() => HookRun {
            blocked: false,
            summary: format!(
                "it failed, and onFailure \"skip\" lets the call run: {}",
                skipped.join("; ")
            ),
        },
        HookOutcome::Continue => HookRun {
            blocked: false,
            summary: format!("it ran and let the sample {tool} call continue"),
        },
    })
}

/// Runs the hooks that match `ctx.tool`, in order; the first block wins and later hooks do not
/// run.
pub async fn run_hooks(phase: HookPhase, hooks: &[Hook], ctx: &HookContext<'_>) -> HookOutcome {
    run_hooks_report(phase, hooks, ctx).await.outcome
}

/// [`run_hooks`], also returning the failures that `onFailure: "skip"` let pass.
pub async fn run_hooks_report(
    phase: HookPhase,
    hooks: &[Hook],
    ctx: &HookContext<'_>,
) -> HookReport {
    let mut report = HookReport {
        outcome: HookOutcome::Continue,
        skipped: Vec::new(),
    };
    let matching: Vec<&Hook> = hooks.iter().filter(|h| hook_matches(h, ctx.tool)).collect();
    if matching.is_empty() {
        return report;
    }
    let input = HookInput::new(phase, ctx);
    for hook in matching {
        match run_one(hook, ctx.root, &input).await {
            Ran::Continue => {}
            Ran::Blocked(reason) => {
                report.outcome = HookOutcome::Block {
                    hook_id: hook.id.clone(),
                    reason,
                };
                return report;
            }
            Ran::Failed(failure) => match hook.on_failure {
                OnFailure::Block => {
                    report.outcome = HookOutcome::Block {
                        hook_id: hook.id.clone(),
                        reason: format!(
                            "hook {:?} {failure}; it is set to block on failure, so the call was stopped (fix the hook, or set its onFailure to \"skip\")",
                            hook.id
                        ),
                    };
                    return report;
                }
                OnFailure::Skip => {
                    tracing::warn!(hook = %hook.id, %failure, "hook failed; skipped as configured");
                    report.skipped.push(SkippedHook {
                        hook_id: hook.id.clone(),
                        failure,
                    });
                }
            },
        }
    }
    report
}

/// What every hook of one run gets, built once.
struct HookInput {
    env: Vec<(&'static str, String)>,
    /// Variables to take out of the inherited environment (a stale `TOOL_OUTPUT` in pre).
    unset: Vec<&'static str>,
    stdin: Arc<[u8]>,
}

impl HookInput {
    fn new(phase: HookPhase, ctx: &HookContext<'_>) -> HookInput {
        let mut truncated = Vec::new();
        let arg_str = |key: &str| {
            ctx.args
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut env = vec![
            ("TOOL_NAME", ctx.tool.as_str().to_string()),
            ("TOOL_CALL_ID", env_safe(ctx.call_id)),
        ];
        let full_json = Value::Object(ctx.args.clone()).to_string();
        let input_json = if full_json.len() <= ENV_VALUE_CAP {
            full_json
        } else {
            truncated.push("TOOL_INPUT_JSON");
            let summary = crate::audit::summarize_args(ctx.args).to_string();
            if summary.len() <= ENV_VALUE_CAP {
                summary
            } else {
                // Even the summary is too big (thousands of keys); cut JSON is not JSON.
                String::new()
            }
        };
        env.push(("TOOL_INPUT_JSON", input_json));
        for (var, value) in [
            ("TOOL_INPUT_COMMAND", arg_str("command")),
            ("TOOL_INPUT_PATH", arg_str("path")),
        ] {
            env.push((var, capped_env(var, &value, &mut truncated)));
        }
        let mut unset = Vec::new();
        match (phase, ctx.output) {
            (HookPhase::Post, output) => {
                let output = output.unwrap_or("");
                env.push((
                    "TOOL_OUTPUT",
                    capped_env("TOOL_OUTPUT", output, &mut truncated),
                ));
            }
            (HookPhase::Pre, _) => unset.push("TOOL_OUTPUT"),
        }
        env.push(("WORKSPACE_PATH", env_safe(&ctx.root.to_string_lossy())));
        if truncated.is_empty() {
            unset.push("TOOL_INPUT_TRUNCATED");
        } else {
            env.push(("TOOL_INPUT_TRUNCATED", truncated.join(",")));
        }

        let mut call = json!({
            "tool": ctx.tool.as_str(),
            "callId": ctx.call_id,
            "args": ctx.args,
            "phase": phase.as_str(),
        });
        if phase == HookPhase::Post
            && let Some(obj) = call.as_object_mut()
        {
            let output = ctx.output.unwrap_or("");
            let cut = floor_char_boundary(output, STDIN_OUTPUT_CAP);
            obj.insert("output".into(), Value::from(&output[..cut]));
            if cut < output.len() {
                obj.insert("outputTruncated".into(), Value::Bool(true));
            }
        }
        let mut stdin = call.to_string().into_bytes();
        stdin.push(b'\n');
        HookInput {
            env,
            unset,
            stdin: stdin.into(),
        }
    }
}

fn env_safe(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

fn capped_env(var: &'static str, value: &str, truncated: &mut Vec<&'static str>) -> String {
    let value = env_safe(value);
    let cut = floor_char_boundary(&value, ENV_VALUE_CAP);
    if cut < value.len() {
        truncated.push(var);
    }
    value[..cut].to_string()
}

/// The largest index `<= max` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

enum Ran {
    Continue,
    Blocked(String),
    /// Why it failed, phrased to follow `hook "id" `.
    Failed(String),
}

/// Kills a hook's process group when dropped while armed. Armed only while the group leader is
/// unreaped: its pid then still names the group, so the signal cannot reach a stranger.
struct GroupKill(Option<Pid>);

impl GroupKill {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // ESRCH (the group is already gone) is the outcome we want anyway.
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn run_one(hook: &Hook, root: &Path, input: &HookInput) -> Ran {
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for var in &input.unset {
        cmd.env_remove(var);
    }
    for (var, value) in &input.env {
        cmd.env(var, value);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Ran::Failed(format!("could not be started in {}: {err}", root.display()));
        }
    };
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    // Declared after `child`, so it is dropped first: the group dies while its leader is
    // still unreaped.
    let mut group = GroupKill(pgid);

    let writer = child.stdin.take().map(|mut stdin| {
        let bytes = input.stdin.clone();
        // A hook need not read its stdin; a broken pipe is not a failure.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        })
    });
    let stderr_buf = Arc::new(Mutex::new(Vec::new()));
    let mut reader = child
        .stderr
        .take()
        .map(|stderr| tokio::spawn(read_capped(stderr, stderr_buf.clone(), REASON_CAP * 4)));

    let limit = Duration::from_millis(hook.timeout);
    let waited = tokio::time::timeout(limit, child.wait()).await;
    let status = match waited {
        Ok(Ok(status)) => {
            group.0 = None;
            Ok(status)
        }
        Ok(Err(err)) => {
            group.kill();
            let _ = child.wait().await;
            Err(format!("could not be waited for: {err}"))
        }
        Err(_) => {
            group.kill();
            let _ = child.wait().await;
            Err(format!(
                "did not finish within its timeout of {} ms and was killed",
                hook.timeout
            ))
        }
    };
    if let Some(reader) = reader.as_mut()
        && tokio::time::timeout(LINGER_GRACE, &mut *reader)
            .await
            .is_err()
    {
        // Something the hook started still holds its stderr: kill the rest of its group.
        // Those processes keep the group id in use, so it cannot name another group yet.
        if let Some(pgid) = pgid {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
        let _ = tokio::time::timeout(LINGER_GRACE, &mut *reader).await;
        reader.abort();
    }
    if let Some(writer) = writer {
        writer.abort();
    }
    let stderr = {
        let buf = stderr_buf.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&buf).trim().to_string()
    };
    let status = match status {
        Ok(status) => status,
        Err(failure) => return Ran::Failed(with_stderr(failure, &stderr)),
    };
    match status.code() {
        Some(0) => Ran::Continue,
        Some(2) if stderr.is_empty() => Ran::Blocked(format!(
            "hook {:?} blocked the call (exit 2) without giving a reason",
            hook.id
        )),
        Some(2) => Ran::Blocked(cap_reason(&stderr)),
        Some(code) => Ran::Failed(with_stderr(format!("exited with status {code}"), &stderr)),
        None => {
            use std::os::unix::process::ExitStatusExt;
            let signal = status
                .signal()
                .and_then(crate::signals::name)
                .unwrap_or("a signal");
            Ran::Failed(with_stderr(format!("was killed by {signal}"), &stderr))
        }
    }
}

fn with_stderr(failure: String, stderr: &str) -> String {
    if stderr.is_empty() {
        failure
    } else {
        format!("{failure}: {}", cap_reason(stderr))
    }
}

fn cap_reason(s: &str) -> String {
    let cut = floor_char_boundary(s, REASON_CAP);
    if cut < s.len() {
        format!("{}…", &s[..cut])
    } else {
        s.to_string()
    }
}

/// Reads `pipe` to its end, keeping the first `cap` bytes in `buf` and discarding the rest so
/// a chatty hook never blocks on a full pipe.
async fn read_capped(mut pipe: impl AsyncRead + Unpin, buf: Arc<Mutex<Vec<u8>>>, cap: usize) {
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
                let room = cap.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}
