//! TypeScript from the Rust wire types' JSON Schemas (schemars), so each wire type is written
//! once. Two files come out of it: the extension's bridge types
//! (`extension/src/shared/gen/bridge.ts`, made here, with a staleness test, so the extension's
//! checks never need the app's GTK build) and the UI's types (`ui/src/gen/types.ts`, made by the
//! app's `tsgen`, which calls [`typescript`] with its own roots).
//!
//! The converter covers what our types use: objects, string enums, tagged unions, arrays,
//! maps, optional and nullable fields, and references between types.

use std::collections::BTreeMap;

use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// A generator for the shape as serialised: a field with a default is always present in what
/// Rust sends, so only `skip_serializing_if` fields come out optional.
pub fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

/// The definitions `g` collected, by name.
pub fn definitions(g: &SchemaGenerator) -> BTreeMap<String, Value> {
    g.definitions()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// One `export type` per definition, after `header` (the "generated, do not edit" lines).
pub fn typescript(header: &str, definitions: &BTreeMap<String, Value>) -> String {
    let mut out = String::from(header);
    for (name, schema) in definitions {
        if let Some(d) = schema.get("description").and_then(Value::as_str) {
            out.push_str(&doc(d, ""));
        }
        out.push_str(&format!("export type {name} = {};\n\n", ty(schema, "")));
    }
    out
}

/// The extension's bridge wire types (DESIGN §6), and the signing constants both sides use.
pub fn extension_bridge() -> String {
    use crate::bridge::{broker, sign, wire};
    let mut g = generator();
    let _ = g.subschema_for::<crate::protocol::ToolCall>();
    let _ = g.subschema_for::<crate::protocol::CallRequest>();
    let _ = g.subschema_for::<crate::protocol::CallResult>();
    let _ = g.subschema_for::<broker::Event>();
    let _ = g.subschema_for::<wire::Health>();
    let _ = g.subschema_for::<wire::AdapterReport>();
    let _ = g.subschema_for::<wire::AdapterProblems>();
    let _ = g.subschema_for::<wire::PendingAnswer>();
    let _ = g.subschema_for::<wire::ErrorBody>();
    let _ = g.subschema_for::<wire::PanelCallReport>();
    let _ = g.subschema_for::<wire::PanelCallAudited>();
    let _ = g.subschema_for::<wire::InvalidCallReport>();
    let _ = g.subschema_for::<wire::InvalidCallFormatted>();
    let defs = definitions(&g);
    let mut out = typescript(
        "// Generated from the Rust types by src/tsgen.rs; do not edit by hand.\n// Regenerate: GL_WRITE_TYPES=1 cargo test --lib tsgen\n/* eslint-disable */\n\n",
        &defs,
    );
    // The tool names as a value too, so an event naming another tool is refused at run time.
    if let Some(names) = defs.get("ToolName").and_then(|s| s.get("enum")) {
        out.push_str(&format!(
            "export const TOOL_NAMES: readonly ToolName[] = {names};\n\n"
        ));
    }
    out.push_str(&doc("The bridge's flood limits (DESIGN §5.2).", ""));
    out.push_str(&format!(
        "export const LIMITS = {{\n  maxCallsPerReply: {},\n}} as const;\n\n",
        crate::reply::MAX_CALLS_PER_REPLY
    ));
    out.push_str(&doc(
        "The bridge's default port (`Settings::default`): the extension's default address.",
        "",
    ));
    out.push_str(&format!(
        "export const DEFAULT_PORT = {};\n\n",
        crate::protocol::Settings::default().port
    ));
    out.push_str(&doc(
        "Header names and MAC labels of signed requests and answers (src/bridge/sign.rs).",
        "",
    ));
    out.push_str("export const SIGNING = {\n");
    for (k, v) in sign::constants() {
        out.push_str(&format!("  {k}: {},\n", Value::String(v.to_string())));
    }
    out.push_str("} as const;\n");
    out
}

fn doc(text: &str, indent: &str) -> String {
    let body = text.replace("*/", "*\\/");
    if body.contains('\n') {
        let lines: Vec<String> = body
            .lines()
            .map(|l| format!("{indent} * {l}").trim_end().to_string())
            .collect();
        format!("{indent}/**\n{}\n{indent} */\n", lines.join("\n"))
    } else {
        format!("{indent}/** {body} */\n")
    }
}

fn literal(v: &Value) -> String {
    v.to_string()
}

fn union(parts: Vec<String>) -> String {
    let mut seen = Vec::new();
    for p in parts {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    if seen.is_empty() {
        "never".to_string()
    } else {
        seen.join(" | ")
    }
}

fn ty(s: &Value, indent: &str) -> String {
    let Some(obj) = s.as_object() else {
        return if s == &Value::Bool(false) {
            "never".into()
        } else {
            "unknown".into()
        };
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or("unknown").to_string();
    }
    if let Some(c) = obj.get("const") {
        return literal(c);
    }
    if let Some(e) = obj.get("enum").and_then(Value::as_array) {
        return union(e.iter().map(literal).collect());
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = obj.get(key).and_then(Value::as_array) {
            return union(alts.iter().map(|a| ty(a, indent)).collect());
        }
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        return all
            .iter()
            .map(|a| ty(a, indent))
            .collect::<Vec<_>>()
            .join(" & ");
    }
    match obj.get("type") {
        Some(Value::Array(types)) => union(
            types
                .iter()
                .map(|t| {
                    let mut one = obj.clone();
                    one.insert("type".into(), t.clone());
                    ty(&Value::Object(one), indent)
                })
                .collect(),
        ),
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = obj
                    .get("items")
                    .map(|i| ty(i, indent))
                    .unwrap_or_else(|| "unknown".into());
                if item.contains(' ') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object(obj, indent),
            _ => "unknown".into(),
        },
        _ => "unknown".into(),
    }
}

fn object(obj: &Map<String, Value>, indent: &str) -> String {
    let props = obj.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        return match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => "Record<string, never>".into(),
            Some(extra @ Value::Object(_)) => format!("Record<string, {}>", ty(extra, indent)),
            _ => "Record<string, unknown>".into(),
        };
    };
    let inner = format!("{indent}  ");
    let mut s = String::from("{\n");
    for (k, v) in props {
        if let Some(d) = v.get("description").and_then(Value::as_str) {
            s.push_str(&doc(d, &inner));
        }
        let opt = if required.contains(&k.as_str()) {
            ""
        } else {
            "?"
        };
        let key = if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            k.clone()
        } else {
            format!("{k:?}")
        };
        s.push_str(&format!("{inner}{key}{opt}: {};\n", ty(v, &inner)));
    }
    s.push_str(indent);
    s.push('}');
    s
}

/// Checks a generated file against `fresh` (rewriting it first when `GL_WRITE_TYPES` is set),
/// and that it defines each of `names`: the staleness test of every generated file.
/// `Err` says which file is stale and the command that regenerates it (`hint`).
pub fn check_generated(
    path: &std::path::Path,
    fresh: &str,
    names: &[&str],
    hint: &str,
) -> Result<(), String> {
    for name in names {
        if !fresh.contains(&format!("export type {name} = ")) {
            return Err(format!(
                "{name} is missing from the generated {}",
                path.display()
            ));
        }
    }
    if std::env::var_os("GL_WRITE_TYPES").is_some() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, fresh).map_err(|e| e.to_string())?;
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    if on_disk == fresh {
        Ok(())
    } else {
        Err(format!("{} is stale: run {hint}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_the_shapes_we_use() {
        let table = [
            (serde_json::json!({"type": "string"}), "string"),
            (
                serde_json::json!({"type": ["integer", "null"]}),
                "number | null",
            ),
            (
                serde_json::json!({"type": "array", "items": {"$ref": "#/$defs/Rule"}}),
                "Rule[]",
            ),
            (
                serde_json::json!({"type": "array", "items": {"type": ["string", "null"]}}),
                "(string | null)[]",
            ),
            (
                serde_json::json!({"enum": ["ask", "auto"]}),
                "\"ask\" | \"auto\"",
            ),
            (
                serde_json::json!({"anyOf": [{"$ref": "#/$defs/Rule"}, {"type": "null"}]}),
                "Rule | null",
            ),
            (
                serde_json::json!({"type": "object", "additionalProperties": true}),
                "Record<string, unknown>",
            ),
            (
                serde_json::json!({"type": "object", "additionalProperties": {"type": "integer"}}),
                "Record<string, number>",
            ),
            (
                serde_json::json!({"type": "object", "properties": {"type": {"const": "deny"}, "reason": {"type": "string"}}, "required": ["type"]}),
                "{\n  reason?: string;\n  type: \"deny\";\n}",
            ),
            (serde_json::json!(true), "unknown"),
        ];
        for (schema, want) in table {
            assert_eq!(ty(&schema, ""), want, "{schema}");
        }
    }

    #[test]
    fn extension_types_are_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("extension/src/shared/gen/bridge.ts");
        let names = [
            "CallRequest",
            "CallResult",
            "Event",
            "Health",
            "PendingAnswer",
            "ErrorBody",
        ];
        let hint = "GL_WRITE_TYPES=1 cargo test --lib tsgen";
        if let Err(e) = check_generated(&path, &extension_bridge(), &names, hint) {
            panic!("{e}");
        }
    }
}
