//! Tauri commands: one-to-three-line adapters over the core and the app's modules. Which
//! window may call which command is decided by the capability files
//! (`src-tauri/capabilities/`): the approval window can only read and answer approvals. A
//! command that can fail rejects with a [`CommandError`] (`{ kind, message }`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tauri::State;
use tauri::ipc::Channel;

use ground_link::hooks::{HookRun, try_hook};
use ground_link::policy::edit::{self, RuleEdit, RuleFileView, TrustView};
use ground_link::protocol::{ApprovalAnswer, Decision, Hook, Layer};

use crate::app::App;
use crate::audit_view::{self, AuditFilter, AuditPage, ChainCheck};
use crate::error::CommandError;
pub use crate::host::StatusView;
use crate::settings::{AppSettings, RootCheck};
use crate::view::DialogState;

type Res<T> = Result<T, CommandError>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairedExtension {
    pub origin: String,
    /// Unix seconds of its last authenticated request.
    pub last_seen: u64,
}

/// A named MCP client (`ground-link token add NAME`): its name and when its token was made.
/// The token itself is shown once, when it is made, and never kept (only its digest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientView {
    pub name: String,
    /// Unix seconds.
    pub created: u64,
}

/// A client just made: the view, and its token, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientAdded {
    pub pairing: PairingView,
    pub token: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingView {
    pub token: String,
    pub kept_in: String,
    pub warning: Option<String>,
    pub port: Option<u16>,
    pub connected: bool,
    pub paired: Vec<PairedExtension>,
    /// Named MCP clients, oldest first.
    pub clients: Vec<ClientView>,
    /// Why the client list could not be read, if it could not.
    pub clients_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsView {
    pub settings: AppSettings,
    pub status: StatusView,
    pub global_rules: String,
    pub managed_rules: String,
    pub audit_dir: String,
    /// The folder of the app's diagnostic log (empty when there is none).
    pub log_dir: String,
    pub version: String,
}

// ---- approval window ---------------------------------------------------------------------------

#[tauri::command]
pub fn approval_subscribe(app: State<'_, Arc<App>>, channel: Channel<DialogState>) -> DialogState {
    app.subscribe_dialog(channel)
}

#[tauri::command]
pub fn approval_answer(
    app: State<'_, Arc<App>>,
    call_id: String,
    answer: ApprovalAnswer,
) -> Res<()> {
    Ok(app.host.approver.answer(&call_id, answer)?)
}

#[tauri::command]
pub fn approval_rendered(app: State<'_, Arc<App>>, call_id: String) -> Option<u64> {
    app.dialog_rendered(&call_id)
}

// ---- settings window ---------------------------------------------------------------------------

#[tauri::command]
pub fn settings_get(app: State<'_, Arc<App>>) -> SettingsView {
    app.settings_view()
}

#[tauri::command]
pub async fn settings_save(app: State<'_, Arc<App>>, settings: AppSettings) -> Res<SettingsView> {
    app.save_settings(settings).await
}

#[tauri::command]
pub fn status_get(app: State<'_, Arc<App>>) -> StatusView {
    app.host.status()
}

#[tauri::command]
pub fn root_check(app: State<'_, Arc<App>>, path: String) -> RootCheck {
    let (path, home) = (std::path::Path::new(path.trim()), dirs_home());
    crate::settings::check_root_protected(path, home.as_deref(), app.host.paths())
}

fn dirs_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(std::path::PathBuf::from)
}

#[tauri::command]
pub async fn root_pick(app: State<'_, Arc<App>>) -> Res<Option<String>> {
    Ok(app.pick_folder().await)
}

#[tauri::command]
pub fn root_open(app: State<'_, Arc<App>>) -> Res<()> {
    app.open_root()
}

#[tauri::command]
pub fn rules_view(app: State<'_, Arc<App>>, layer: Layer) -> Res<RuleFileView> {
    let engine = app.engine()?;
    Ok(edit::view(engine.policy(), engine.jail(), layer)?)
}

#[tauri::command]
pub fn rules_apply(app: State<'_, Arc<App>>, layer: Layer, edit: RuleEdit) -> Res<RuleFileView> {
    let engine = app.engine()?;
    Ok(edit::apply(engine.policy(), engine.jail(), layer, edit)?)
}

#[tauri::command]
pub fn rules_check_call(app: State<'_, Arc<App>>, call: String) -> Res<Decision> {
    let req = ground_link::engine::parse_request(&call).map_err(CommandError::invalid_input)?;
    Ok(app.engine()?.check(&req))
}

#[tauri::command]
pub fn trust_get(app: State<'_, Arc<App>>) -> Res<TrustView> {
    Ok(edit::trust_view(app.engine()?.policy()))
}

#[tauri::command]
pub fn trust_project(app: State<'_, Arc<App>>, shown: String) -> Res<TrustView> {
    let engine = app.engine()?;
    engine.policy().trust_project_as_shown(&shown)?;
    Ok(edit::trust_view(engine.policy()))
}

#[tauri::command]
pub async fn hook_run(app: State<'_, Arc<App>>, hook: Hook) -> Res<HookRun> {
    let engine = app.engine()?;
    Ok(try_hook(&hook, engine.jail().root()).await?)
}

#[tauri::command]
pub fn pairing_get(app: State<'_, Arc<App>>) -> PairingView {
    app.pairing_view()
}

#[tauri::command]
pub fn token_copy(app: State<'_, Arc<App>>) -> Res<()> {
    app.copy_token()
}

#[tauri::command]
pub async fn token_rotate(app: State<'_, Arc<App>>) -> Res<PairingView> {
    app.rotate_token().await
}

#[tauri::command]
pub fn client_add(app: State<'_, Arc<App>>, name: String) -> Res<ClientAdded> {
    app.add_client(&name)
}

#[tauri::command]
pub fn client_revoke(app: State<'_, Arc<App>>, name: String) -> Res<PairingView> {
    app.revoke_client(&name)
}

#[tauri::command]
pub fn audit_read(app: State<'_, Arc<App>>, filter: AuditFilter) -> AuditPage {
    audit_view::read(&app.host.paths().audit_dir(), &filter)
}

#[tauri::command]
pub fn audit_verify(app: State<'_, Arc<App>>) -> ChainCheck {
    audit_view::verify(&app.host.paths().audit_dir())
}

include!("command_names.rs");
