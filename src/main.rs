//! `ground-link`: the command-line face of the core library (DESIGN §9). Glue only: parse
//! flags, build an [`Engine`], print what it returns.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use ground_link::approval::{
    ALLOW_APPROVER_WARNING, AllowOnceApprover, Approver, DenyApprover, TtyApprover,
};
use ground_link::bridge::token::TokenStore;
use ground_link::engine::{Engine, EngineConfig, parse_request};
use ground_link::paths::ConfigPaths;
use ground_link::protocol::{ApprovalMode, SandboxMode, Settings, Source};

#[derive(Parser)]
#[command(
    name = "ground-link",
    version,
    about = "Let the LLM you chat with work on your local files, safely."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Approval {
    Tty,
    Deny,
    Allow,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The sandbox root: every path is resolved inside it.
    #[arg(long, value_name = "D")]
    dir: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = Settings::default().port)]
    port: u16,
    /// Read the token from F (created if missing) instead of the default location.
    #[arg(long, value_name = "F")]
    token_file: Option<PathBuf>,
    /// Who answers approvals (default: tty on a terminal, else deny).
    #[arg(long, value_enum)]
    approval: Option<Approval>,
    /// The reason `--approval deny` gives the model.
    #[arg(long, value_name = "R")]
    deny_reason: Option<String>,
    #[arg(long, value_enum, default_value_t = Settings::default().sandbox)]
    sandbox: SandboxMode,
    #[arg(long, value_enum, default_value_t = Settings::default().mode)]
    mode: ApprovalMode,
    /// Seconds to wait for an approval before denying.
    #[arg(long, default_value_t = Settings::default().approval_timeout_sec)]
    approval_timeout: u64,
}

#[derive(clap::Args)]
struct Common {
    /// The sandbox root: every path is resolved inside it.
    #[arg(long, value_name = "D")]
    dir: PathBuf,
    #[arg(long, value_enum, default_value_t = Settings::default().sandbox)]
    sandbox: SandboxMode,
    #[arg(long, value_enum, default_value_t = Settings::default().mode)]
    mode: ApprovalMode,
    /// The call as JSON: {"name":…,"args":{…},"reason":…}; `-` reads it from stdin.
    #[arg(long, value_name = "CALL")]
    json: String,
}

impl Common {
    fn request(&self) -> Result<ground_link::protocol::CallRequest> {
        let text = if self.json == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .context("reading the call from stdin")?;
            s
        } else {
            self.json.clone()
        };
        parse_request(&text).map_err(anyhow::Error::msg)
    }
}

/// Named tokens, one per MCP client: the audit log and the person's questions name the client,
/// and revoking one leaves the others and the extension working.
#[derive(Subcommand)]
enum ClientCommand {
    /// Make a token for the client NAME and print it (the only time it is shown).
    Add { name: String },
    /// List the named clients.
    List,
    /// Revoke the client NAME's token; a running bridge refuses it at once.
    Revoke { name: String },
}

#[derive(clap::Args)]
struct McpArgs {
    /// The port of the running tray app or `ground-link serve`.
    #[arg(long, default_value_t = Settings::default().port)]
    port: u16,
    /// A 0600 file holding this client's token (`ground-link token add NAME > F`). Never the
    /// bridge token: that is the extension's pairing key.
    #[arg(long, value_name = "F")]
    token_file: PathBuf,
    /// Start the tray app first when none is running (needs a display).
    #[arg(long)]
    start: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bridge on 127.0.0.1 for the browser extension, asking approvals on this terminal.
    Serve(ServeArgs),
    /// A stdio MCP server for MCP clients that start a command (Claude Desktop, Cursor, Codex
    /// CLI): it relays to the running tray app or `serve`, whose engine decides and asks.
    Mcp(McpArgs),
    /// Show the bridge token (or replace it with --rotate); `token add|list|revoke` manage
    /// the named tokens of MCP clients.
    Token {
        #[command(subcommand)]
        client: Option<ClientCommand>,
        #[arg(long)]
        rotate: bool,
        #[arg(long, value_name = "F")]
        token_file: Option<PathBuf>,
    },
    /// Print the decision for a call and why; runs nothing.
    Check {
        #[command(flatten)]
        common: Common,
    },
    /// Run one call through the whole pipeline and print the result object.
    Call {
        #[command(flatten)]
        common: Common,
        /// Who answers when the call needs approval (default: deny).
        #[arg(long, value_enum, default_value = "deny")]
        approval: Approval,
        /// The reason a scripted deny gives the model.
        #[arg(long, value_name = "R")]
        deny_reason: Option<String>,
        /// Seconds to wait for an approval before denying.
        #[arg(long, default_value_t = Settings::default().approval_timeout_sec)]
        approval_timeout: u64,
    },
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The native-messaging host Chrome starts for the extension (DESIGN §8.2); it relays to
    /// the running tray app or `serve`. ORIGIN is the caller origin Chrome passes.
    NativeHost { origin: String },
    /// Tell browsers where the native-messaging host is: write (or with --uninstall remove)
    /// its manifest in each browser's user folder.
    InstallNativeHost {
        /// Which browser; `all` writes for each browser whose folder exists.
        #[arg(long, value_enum, default_value = "all")]
        browser: BrowserArg,
        /// Remove the manifests instead.
        #[arg(long)]
        uninstall: bool,
        /// Write into D instead (e.g. a browser's `<user-data-dir>/NativeMessagingHosts`).
        #[arg(long, value_name = "D", conflicts_with = "system")]
        dir: Option<PathBuf>,
        /// For every user of this computer: the browsers' folders under /etc (needs root;
        /// the .deb does this itself).
        #[arg(long)]
        system: bool,
    },
    /// Trust the project rule file of a sandbox as it is now (its allow rules and hooks apply
    /// only while it stays unchanged).
    Trust {
        #[arg(long, value_name = "D")]
        dir: PathBuf,
        /// Only show what changed since the last trust; trust nothing.
        #[arg(long)]
        show: bool,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum BrowserArg {
    Chrome,
    Chromium,
    Edge,
    Brave,
    All,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check the hash chain of every audit file.
    Verify {
        /// Audit folder (default: $XDG_DATA_HOME/ground-link/audit).
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    ground_link::supervisor::run_if_supervisor();
    ground_link::isolate::run_probe_if_asked();
    // A command the model runs must not drive ground-link itself (print the token, trust its
    // own project rules): its mount namespace carries a mark the command cannot remove (the
    // engine's variable is only a hint: `env -u` drops it). The namespace hides the state
    // these commands would touch anyway; this says so plainly.
    if ground_link::isolate::inside_exec() {
        eprintln!(
            "ground-link: refusing to run inside exec_cmd (a command the model started); \
             run ground-link yourself, in your own terminal"
        );
        return ExitCode::from(2);
    }
    ground_link::logging::to_stderr();
    // Chrome starts the host named in a native-messaging manifest with the caller origin as
    // its only argument (and no subcommand), so that form is recognised before clap sees it.
    if let Some(origin) = std::env::args()
        .nth(1)
        .filter(|a| a.starts_with("chrome-extension://"))
    {
        return native_host(&origin);
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ground-link: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Native-host mode: stdout is Chrome's, so every word for a person goes to stderr.
fn native_host(origin: &str) -> ExitCode {
    match ground_link::native_host::run(origin) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ground-link native-host: {e}");
            ExitCode::from(2)
        }
    }
}

fn install_native_host(
    browser: BrowserArg,
    uninstall: bool,
    dir: Option<PathBuf>,
    system: bool,
) -> Result<ExitCode> {
    use ground_link::native_host::{Browser, install_into, uninstall_from};
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("finding this program's own path for the manifest")?;
    let chosen = |all: &dyn Fn(Browser) -> bool| -> Vec<Browser> {
        match browser {
            BrowserArg::Chrome => vec![Browser::Chrome],
            BrowserArg::Chromium => vec![Browser::Chromium],
            BrowserArg::Edge => vec![Browser::Edge],
            BrowserArg::Brave => vec![Browser::Brave],
            BrowserArg::All => Browser::ALL.into_iter().filter(|b| all(*b)).collect(),
        }
    };
    let dirs: Vec<PathBuf> = match dir {
        Some(d) => vec![d],
        None if system => {
            // `GROUND_LINK_ETC` moves /etc for tests; nothing else reads it.
            let etc = std::env::var_os("GROUND_LINK_ETC")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/etc"));
            // Only browsers that are installed (their /etc folder's parent exists).
            let installed = |b: Browser| {
                b.system_folder().is_some_and(|f| {
                    let folder = etc.join(f);
                    uninstall || folder.parent().is_some_and(std::path::Path::is_dir)
                })
            };
            let picked = chosen(&installed);
            if let Some(b) = picked.iter().find(|b| b.system_folder().is_none()) {
                bail!(
                    "{} has no system-wide folder for host manifests on Linux; install for your user instead (leave out --system)",
                    b.config_folder()
                );
            }
            if picked.is_empty() {
                bail!(
                    "found no Chrome, Chromium or Edge folder under {}; name one with --browser",
                    etc.display()
                );
            }
            picked
                .into_iter()
                .filter_map(|b| b.system_folder().map(|f| etc.join(f)))
                .collect()
        }
        None => {
            let config = dirs::config_dir()
                .context("cannot find ~/.config: set HOME or XDG_CONFIG_HOME, or pass --dir")?;
            // Only browsers that are there: installing creates no folders for the rest.
            let chosen: Vec<Browser> =
                chosen(&|b| uninstall || config.join(b.config_folder()).is_dir());
            if chosen.is_empty() {
                bail!(
                    "found no Chrome, Chromium, Edge or Brave folder under {}; name one with                      --browser, or give its NativeMessagingHosts folder with --dir",
                    config.display()
                );
            }
            chosen
                .into_iter()
                .map(|b| config.join(b.config_folder()).join("NativeMessagingHosts"))
                .collect()
        }
    };
    for d in dirs {
        if uninstall {
            match uninstall_from(&d).with_context(|| format!("removing from {}", d.display()))? {
                Some(f) => println!("removed {}", f.display()),
                None => println!("nothing to remove in {}", d.display()),
            }
        } else {
            let f = install_into(&d, &exe).with_context(|| {
                if system {
                    format!(
                        "writing into {} (system folders need root: sudo)",
                        d.display()
                    )
                } else {
                    format!("writing into {}", d.display())
                }
            })?;
            println!("wrote {}", f.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The engine for a command's flags: the flags over the default settings, through the one
/// mapping from settings to the engine (`EngineConfig::with_settings`, the app's too).
fn engine_config(
    dir: &std::path::Path,
    sandbox: SandboxMode,
    mode: ApprovalMode,
    approval_timeout_sec: u64,
) -> Result<EngineConfig> {
    let settings = Settings {
        sandbox,
        mode,
        approval_timeout_sec,
        ..Settings::default()
    };
    Ok(EngineConfig::with_settings(
        dir.to_path_buf(),
        ConfigPaths::from_env()?,
        &settings,
    ))
}

fn approver(approval: Approval, deny_reason: Option<String>) -> Result<Arc<dyn Approver>> {
    Ok(match approval {
        Approval::Deny => Arc::new(DenyApprover {
            reason: deny_reason,
        }),
        Approval::Allow => {
            eprintln!("{ALLOW_APPROVER_WARNING}");
            Arc::new(AllowOnceApprover)
        }
        Approval::Tty => Arc::new(
            TtyApprover::open().context("--approval tty needs a terminal; use --approval deny")?,
        ),
    })
}

/// The agent token's store: the file `--token-file` names, else the keyring or the default file.
fn token_store(token_file: Option<PathBuf>) -> Result<TokenStore> {
    Ok(match token_file {
        Some(f) => TokenStore::file(f),
        None => TokenStore::open(&ConfigPaths::from_env()?),
    })
}

/// `ground-link mcp`: stdout belongs to the MCP client, so everything else goes to stderr.
fn mcp(args: McpArgs) -> Result<ExitCode> {
    let path = args.token_file;
    let token = std::fs::read_to_string(&path)
        .map(|t| t.trim().to_owned())
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot read the token from {} ({e}); make a client token with `ground-link \
                 token add <name>` into a 0600 file and pass it with --token-file",
                path.display()
            )
        })?;
    if !token.starts_with("glc_") {
        anyhow::bail!(
            "{} does not hold a client token (they start with glc_); make one with `ground-link \
             token add <name>`: the bridge token is the extension's pairing key and never \
             leaves for a relay",
            path.display()
        );
    }
    if args.start && ground_link::bridge::relay::listener_uid(args.port).is_none() {
        start_app(args.port)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let target = ground_link::bridge::relay::RelayTarget {
        port: args.port,
        token,
    };
    rt.block_on(ground_link::bridge::relay::serve_stdio(target))
        .map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}

/// Starts the tray app for `mcp --start`, only where a person can see its questions.
fn start_app(port: u16) -> Result<()> {
    let display = std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty())
        || std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty());
    if !display {
        anyhow::bail!(
            "nothing answers on port {port} and there is no display to start the tray app on; \
             run `ground-link serve --dir <folder> --port {port}` in a terminal (started by an \
             MCP client, serve would have no terminal to ask you on)"
        );
    }
    std::process::Command::new("ground-link-app")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot start ground-link-app ({e}); put it on the PATH, or start it yourself"
            )
        })?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    anyhow::bail!("started ground-link-app, but nothing answers on port {port} after 15 s")
}

fn serve(args: ServeArgs) -> Result<ExitCode> {
    let ServeArgs {
        dir,
        port,
        token_file,
        approval,
        deny_reason,
        sandbox,
        mode,
        approval_timeout,
    } = args;
    use std::io::IsTerminal;
    let approval = approval.unwrap_or(if std::io::stdin().is_terminal() {
        Approval::Tty
    } else {
        Approval::Deny
    });
    let mut config = engine_config(&dir, sandbox, mode, approval_timeout)?;
    config.watch = true;
    let token = token_store(token_file)?.load()?;
    if let Some(w) = &token.warning {
        eprintln!("warning: {w}");
    }
    let broker = ground_link::bridge::broker::Broker::new(approver(approval, deny_reason)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let engine = Arc::new(Engine::new(config, broker.approver())?);
        let bound = ground_link::bridge::bind(Arc::clone(&engine), broker, token.clone(), port).await?;
        // Whoever started us may close stdout after reading the address; that must not stop
        // the bridge, so write errors are ignored.
        use std::io::Write;
        let mut out = std::io::stdout();
        macro_rules! say {
            ($o:expr, $($t:tt)*) => {{ let _ = writeln!($o, $($t)*); }};
        }
        say!(out, "ground-link listening on http://{}", bound.addr());
        say!(out, "sandbox: {} ({}, mode {})", engine.jail().root().display(), engine.config().sandbox.as_str(), match engine.mode() { ApprovalMode::Ask => "ask", ApprovalMode::Auto => "auto" });
        say!(out, "token: in {} (print it with `ground-link token`)", token.kept_in);
        say!(out, "pair the extension: open its popup, paste the token, port {}", bound.addr().port());
        say!(out, "approvals: {}", match approval { Approval::Tty => "asked on this terminal", Approval::Deny => "every question is denied (--approval deny)", Approval::Allow => "EVERY question is approved (--approval allow, tests only)" });
        if let Some(why) = engine.not_isolated() {
            say!(out, "warning: exec_cmd cannot run in its own namespaces here ({why}); ground-link's own state, your secrets and the network would be within a command's reach, so every exec_cmd asks");
        }
        if let Some(w) = engine.broad_root_warning() {
            say!(out, "warning: {w}");
        }
        if let ground_link::tools::exec::Confinement::Unavailable(why) = engine.confinement() {
            say!(out, "warning: exec_cmd is not confined by the OS here ({why}); every command counts as dangerous");
        }
        for (layer, path, err) in engine.policy().snapshot().errors() {
            say!(out, "warning: {} rule file {path} is broken: {err}", layer.as_str());
        }
        // The extension's native-messaging host relays here; the HTTP bridge works without it.
        let native = match ground_link::bridge::native::socket_path() {
            Ok(path) => ground_link::bridge::native::listen(Arc::clone(&bound.bridge), &path),
            Err(e) => Err(e),
        };
        match &native {
            Ok(l) => say!(out, "native messaging: {}", l.path().display()),
            Err(e) => say!(out, "warning: no native messaging: {e}"),
        }
        let _ = out.flush();
        bound.serve(shutdown_signal()).await?;
        drop(native);
        eprintln!("ground-link stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Mcp(args) => mcp(args),
        Command::NativeHost { origin } => Ok(native_host(&origin)),
        Command::InstallNativeHost {
            browser,
            uninstall,
            dir,
            system,
        } => install_native_host(browser, uninstall, dir, system),
        Command::Token {
            client: Some(action),
            ..
        } => {
            let clients = ground_link::bridge::clients::Clients::new(
                ground_link::bridge::clients::default_location(&ConfigPaths::from_env()?),
            );
            match action {
                ClientCommand::Add { name } => {
                    let secret = clients.add(&name)?;
                    println!("{secret}");
                    eprintln!(
                        "token for {name}: shown once; give it to the client as \
                         `Authorization: Bearer <token>` (revoke it with `ground-link token \
                         revoke {name}`)"
                    );
                }
                ClientCommand::List => {
                    let list = clients.list()?;
                    if list.is_empty() {
                        eprintln!("no named clients (add one with `ground-link token add NAME`)");
                    }
                    for c in list {
                        println!("{}\tcreated {}", c.name, c.created);
                    }
                }
                ClientCommand::Revoke { name } => {
                    if !clients.revoke(&name)? {
                        anyhow::bail!(
                            "no client named {name:?}; `ground-link token list` shows the names"
                        );
                    }
                    eprintln!("revoked {name}: its token no longer opens the bridge");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Token {
            client: None,
            rotate,
            token_file,
        } => {
            let store = token_store(token_file)?;
            let token = if rotate {
                store.rotate()?
            } else {
                store.load()?
            };
            if let Some(w) = &token.warning {
                eprintln!("warning: {w}");
            }
            println!("{}", token.secret());
            eprintln!(
                "kept in {}{}",
                token.kept_in,
                if rotate {
                    " (rotated: pair the extension again)"
                } else {
                    ""
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { common } => {
            let request = common.request()?;
            let mut config = engine_config(
                &common.dir,
                common.sandbox,
                common.mode,
                Settings::default().approval_timeout_sec,
            )?;
            config.audit = false;
            let engine = Engine::new(config, Arc::new(DenyApprover { reason: None }))?;
            let mut out = serde_json::to_value(engine.check(&request))?;
            if let (Some(class), Some(obj)) = (engine.path_class(&request), out.as_object_mut()) {
                obj.insert("pathClass".into(), class.as_str().into());
            }
            println!("{}", serde_json::to_string(&out)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            common,
            approval,
            deny_reason,
            approval_timeout,
        } => {
            let request = common.request()?;
            let config = engine_config(&common.dir, common.sandbox, common.mode, approval_timeout)?;
            let engine = Engine::new(config, approver(approval, deny_reason)?)?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let result = runtime.block_on(engine.call(request, Source::Cli));
            println!("{}", serde_json::to_string(&result)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit {
            command: AuditCommand::Verify { path },
        } => {
            let dir = match path {
                Some(p) => p,
                None => ConfigPaths::from_env()?.audit_dir(),
            };
            let report = ground_link::audit::verify(&dir)?;
            println!("{}", serde_json::to_string(&report)?);
            if report.is_ok() {
                eprintln!(
                    "audit log OK: {} files, {} lines",
                    report.files, report.lines
                );
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!(
                    "audit log BROKEN: {}",
                    serde_json::to_string(&report.problem)?
                );
                Ok(ExitCode::from(1))
            }
        }
        Command::Trust { dir, show } => {
            let jail = Arc::new(ground_link::jail::Jail::new(
                &dir,
                SandboxMode::WorkspaceWrite,
            )?);
            let policy = ground_link::policy::layers::Policy::load(ConfigPaths::from_env()?, jail);
            let view = ground_link::policy::edit::trust_view(&policy);
            if !view.exists {
                bail!(
                    "{} has no usable project rule file ({})",
                    dir.display(),
                    view.error.unwrap_or_else(|| "it does not exist".into())
                );
            }
            if view.trusted {
                println!("the project rule file is already trusted");
                return Ok(ExitCode::SUCCESS);
            }
            print!("{}", view.diff);
            if !show {
                // Exactly what was printed above, or nothing.
                policy.trust_project_as_shown(view.content.as_deref().unwrap_or_default())?;
                println!("trusted");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
