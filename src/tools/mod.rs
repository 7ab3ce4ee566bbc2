//! The seven sandbox tools of DESIGN §3: their argument types, schemas, annotations and risk.
//!
//! Arguments are parsed once into a typed [`ToolArgs`] (unknown fields and wrong types are
//! errors that name the field); everything after that works on the typed value.

pub mod browser;
pub mod exec;
pub mod fs;
pub mod search;

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{Risk, ToolName};

pub use fs::{EditFileArgs, ListDirArgs, ReadFileArgs, WriteFileArgs, WriteMode};
pub use search::{GlobArgs, GrepArgs};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecCmdArgs {
    /// Shell command line, run with `sh -c` in the sandbox root.
    pub command: String,
    /// Seconds before the whole process tree is killed (default 60).
    #[serde(default)]
    pub timeout_sec: Option<u64>,
    /// Working directory, relative to the sandbox root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// A call's arguments after validation.
#[derive(Debug, Clone)]
pub enum ToolArgs {
    ListDir(ListDirArgs),
    ReadFile(ReadFileArgs),
    Glob(GlobArgs),
    Grep(GrepArgs),
    WriteFile(WriteFileArgs),
    EditFile(EditFileArgs),
    ExecCmd(ExecCmdArgs),
    Browser(browser::BrowserArgs),
}

impl ToolArgs {
    pub fn tool(&self) -> ToolName {
        match self {
            ToolArgs::ListDir(_) => ToolName::ListDir,
            ToolArgs::ReadFile(_) => ToolName::ReadFile,
            ToolArgs::Glob(_) => ToolName::Glob,
            ToolArgs::Grep(_) => ToolName::Grep,
            ToolArgs::WriteFile(_) => ToolName::WriteFile,
            ToolArgs::EditFile(_) => ToolName::EditFile,
            ToolArgs::ExecCmd(_) => ToolName::ExecCmd,
            ToolArgs::Browser(a) => a.tool(),
        }
    }

    /// The path arguments the jail must check, as written.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            ToolArgs::ListDir(a) => vec![a.path.as_str()],
            ToolArgs::ReadFile(a) => vec![a.path.as_str()],
            ToolArgs::Glob(a) => vec![a.path.as_str()],
            ToolArgs::Grep(a) => vec![a.path.as_str()],
            ToolArgs::WriteFile(a) => vec![a.path.as_str()],
            ToolArgs::EditFile(a) => vec![a.path.as_str()],
            ToolArgs::ExecCmd(a) => a.cwd.as_deref().into_iter().collect(),
            ToolArgs::Browser(_) => Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error("unknown tool {0:?}; available tools: {list}", list = tool_list())]
    UnknownTool(String),
    #[error("invalid arguments for {tool}: {detail}; see the tool's schema (GET /tools)")]
    Invalid { tool: ToolName, detail: String },
}

fn tool_list() -> String {
    ToolName::ALL
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Validate `args` for the tool named `name` (aliases accepted).
pub fn parse_args(name: &str, args: &Map<String, Value>) -> Result<ToolArgs, ArgError> {
    if browser::is_page_tool_name(name) {
        return browser::parse_page(name, args)
            .map(ToolArgs::Browser)
            .map_err(|detail| ArgError::Invalid {
                tool: ToolName::PageTool,
                detail,
            });
    }
    let tool = ToolName::from_alias(name).ok_or_else(|| ArgError::UnknownTool(name.to_string()))?;
    fn typed<T: serde::de::DeserializeOwned>(
        tool: ToolName,
        args: &Map<String, Value>,
    ) -> Result<T, ArgError> {
        let value = Value::Object(args.clone());
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            let detail = if path == "." {
                inner
            } else {
                format!("field `{path}`: {inner}")
            };
            ArgError::Invalid { tool, detail }
        })
    }
    Ok(match tool {
        ToolName::ListDir => ToolArgs::ListDir(typed(tool, args)?),
        ToolName::ReadFile => ToolArgs::ReadFile(typed(tool, args)?),
        ToolName::Glob => ToolArgs::Glob(typed(tool, args)?),
        ToolName::Grep => ToolArgs::Grep(typed(tool, args)?),
        ToolName::WriteFile => ToolArgs::WriteFile(typed(tool, args)?),
        ToolName::EditFile => ToolArgs::EditFile(typed(tool, args)?),
        ToolName::ExecCmd => ToolArgs::ExecCmd(typed(tool, args)?),
        _ => match browser::parse(tool, args) {
            Some(Ok(a)) => ToolArgs::Browser(a),
            Some(Err(detail)) => return Err(ArgError::Invalid { tool, detail }),
            None => return Err(ArgError::UnknownTool(name.to_string())),
        },
    })
}

/// MCP-style annotations (DESIGN §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

/// What `GET /tools` lists for one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: ToolName,
    pub description: String,
    pub input_schema: Value,
    pub annotations: Annotations,
    /// The tool's base risk; `exec_cmd` is classified per command.
    pub risk: Risk,
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// The live tool registry; the bridge, the instructions and MCP are generated from it.
pub fn registry() -> &'static [ToolSpec] {
    static REGISTRY: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
        let ro = Annotations {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        };
        let write = Annotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: false,
        };
        let exec = Annotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        };
        vec![
            ToolSpec {
                name: ToolName::ListDir,
                description: "List a directory (sizes, dirs end with '/'); honours .gitignore unless all=true. Args: path=\".\", depth=1 (max 5), all=false.".into(),
                input_schema: schema::<ListDirArgs>(),
                annotations: ro.clone(),
                risk: Risk::Safe,
            },
            ToolSpec {
                name: ToolName::ReadFile,
                description: "Read a text file with line numbers; at most 2000 lines / 256 KiB per call, continue with offset. Args: path, offset (1-based line), limit (lines).".into(),
                input_schema: schema::<ReadFileArgs>(),
                annotations: ro.clone(),
                risk: Risk::Safe,
            },
            ToolSpec {
                name: ToolName::Glob,
                description: "Find files by glob pattern (e.g. **/*.rs); gitignore-aware; one path per line, sorted. Args: pattern, path=\".\", includeDirs=false, maxResults=200 (max 1000).".into(),
                input_schema: schema::<GlobArgs>(),
                annotations: ro.clone(),
                risk: Risk::Safe,
            },
            ToolSpec {
                name: ToolName::Grep,
                description: "Search file contents with a regex (Rust syntax; case-insensitive unless caseSensitive); prints path:line: text. Args: pattern, path=\".\", glob, literal=false, caseSensitive=false, maxResults=100 (max 500).".into(),
                input_schema: schema::<GrepArgs>(),
                annotations: ro,
                risk: Risk::Safe,
            },
            ToolSpec {
                name: ToolName::WriteFile,
                description: "Write a whole file atomically (creates parent folders). Args: path, content, mode=\"overwrite\"|\"append\".".into(),
                input_schema: schema::<WriteFileArgs>(),
                annotations: write.clone(),
                risk: Risk::Moderate,
            },
            ToolSpec {
                name: ToolName::EditFile,
                description: "Replace exact text in a file; oldString must occur exactly once unless replaceAll=true. Args: path, oldString, newString, replaceAll=false.".into(),
                input_schema: schema::<EditFileArgs>(),
                annotations: write,
                risk: Risk::Moderate,
            },
            ToolSpec {
                name: ToolName::ExecCmd,
                description: "Run a shell command (sh -c) in the sandbox folder; output capped at 1 MiB, exit code reported. Args: command, timeoutSec (default 60), cwd (inside the sandbox).".into(),
                input_schema: schema::<ExecCmdArgs>(),
                annotations: exec,
                risk: Risk::Moderate,
            },
        ]
    });
    &REGISTRY
}

/// The browser tools (DESIGN §8.3), listed while a browser with browser tools switched on is
/// connected.
pub fn browser_registry() -> &'static [ToolSpec] {
    static REGISTRY: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
        use browser::*;
        let hints = |tool: ToolName| Annotations {
            read_only_hint: tool == ToolName::SnapshotPage,
            destructive_hint: matches!(tool, ToolName::SubmitForm | ToolName::CloseTab),
            idempotent_hint: tool == ToolName::SnapshotPage,
            open_world_hint: true,
        };
        let one = |tool: ToolName, description: &str, input_schema: Value| ToolSpec {
            name: tool,
            description: description.to_string(),
            input_schema,
            annotations: hints(tool),
            risk: spec_risk(tool),
        };
        vec![
            one(
                ToolName::SnapshotPage,
                "Outline the page in a browser tab (roles, names, links, form fields) with a ref such as e12 on every element you can act on; refs last until the next snapshot of that tab. Password and hidden field values are never shown. Args: tabId (default: the active tab).",
                schema::<SnapshotPageArgs>(),
            ),
            one(
                ToolName::NavigateTo,
                "Load a URL in a browser tab and wait for it. Args: url (absolute, or relative to the page), tabId (default: the active tab).",
                schema::<NavigateToArgs>(),
            ),
            one(
                ToolName::ClickElement,
                "Click an element. Args: ref (from snapshot_page, preferred) or selector (CSS), tabId.",
                schema::<ElementArgs>(),
            ),
            one(
                ToolName::InputText,
                "Type text into a field (replacing its value), as a person would. Args: ref or selector, text, tabId.",
                schema::<InputTextArgs>(),
            ),
            one(
                ToolName::SubmitForm,
                "Submit the form that holds an element. Args: ref or selector, tabId.",
                schema::<ElementArgs>(),
            ),
            one(
                ToolName::OpenTab,
                "Open a URL in a new tab. Args: url (absolute).",
                schema::<OpenTabArgs>(),
            ),
            one(
                ToolName::CloseTab,
                "Close a tab. Args: tabId (from browser://tabs).",
                schema::<TabArgs>(),
            ),
            one(
                ToolName::SwitchTab,
                "Make a tab the active one. Args: tabId (from browser://tabs).",
                schema::<TabArgs>(),
            ),
        ]
    });
    &REGISTRY
}

pub fn spec(tool: ToolName) -> Option<&'static ToolSpec> {
    registry()
        .iter()
        .chain(browser_registry())
        .find(|s| s.name == tool)
}
