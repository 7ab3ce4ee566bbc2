//! The permission engine (DESIGN §5): the decision pipeline over facts the engine gathered.
//!
//! [`decide`] is a pure function: the engine resolves paths through the jail and classifies
//! commands first, then hands the facts here. Steps run strictest first and a later step never
//! loosens an earlier deny; every decision carries the steps that looked at the call.

pub mod classify;
pub mod edit;
pub mod layers;
pub mod rules;

use crate::policy::classify::CommandAnalysis;
use crate::policy::layers::Snapshot;
use crate::policy::rules::{CompiledRule, Subject};
use crate::protect::{PathClass, Protection, glob_names_a_file};
use crate::protocol::{
    ApprovalMode, Decision, Layer, Provenance, Risk, RuleAction, RuleRef, SandboxMode, Scope, Step,
    StepKind, ToolName, Verdict,
};

impl PathFact {
    pub fn protected(&self) -> bool {
        self.class == Some(PathClass::Protected)
    }

    /// A read (not a write) of a file that looks like a secret.
    pub fn sensitive_read(&self) -> bool {
        self.class == Some(PathClass::Sensitive) && !self.write
    }
}

/// A path the call touches, after the jail resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFact {
    /// As the model wrote it.
    pub shown: String,
    /// Root-relative (absolute when outside, which only `full-access` lets through).
    pub rel: String,
    pub inside: bool,
    /// Own state, protected (run-later) or sensitive, from the one matcher
    /// ([`crate::protect`]); `None` for an ordinary path.
    pub class: Option<PathClass>,
    /// The call would write it.
    pub write: bool,
    /// A path argument inside an `exec_cmd` command line (as opposed to a tool argument).
    pub from_command: bool,
}

/// Everything the pipeline needs to know about one call.
#[derive(Debug, Clone)]
pub struct CallFacts<'a> {
    pub tool: ToolName,
    pub paths: &'a [PathFact],
    /// Paths the jail refused outright (NUL bytes, symlink loops, unreadable components).
    pub path_errors: &'a [String],
    pub analysis: Option<&'a CommandAnalysis>,
    pub session: Option<&'a str>,
    /// Set when the call was not found in a recognised model reply: it is always asked about.
    pub provenance: Option<Provenance>,
    /// Browser tools: what the page the call acts on makes of it (none for `check`, which
    /// cannot look at a tab: the call is then judged as if on an unknown page).
    pub browser: Option<&'a crate::tools::browser::BrowserFacts>,
}

#[derive(Debug, Clone, Copy)]
pub struct PolicySettings<'a> {
    pub sandbox: SandboxMode,
    pub mode: ApprovalMode,
    /// Whether `exec_cmd` writes are confined by the OS (Landlock). Without it every command
    /// is `dangerous` in `workspace-write`.
    pub exec_confined: bool,
    /// Why every `exec_cmd` must be asked about here (no namespaces to hide ground-link's
    /// state and secrets, or no bash), if it must.
    pub exec_must_ask: Option<&'a str>,
}

/// The decision plus what the approval dialog may offer.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub decision: Decision,
    /// Scoped answers that make sense (a protected path in `full-access` only offers `once`).
    pub scopes: Vec<Scope>,
    /// An allow rule from a layer whose allow rules apply covers the call with
    /// `"network": true`.
    pub network: bool,
}

struct Trace {
    steps: Vec<Step>,
}

impl Trace {
    fn pass(&mut self, step: StepKind, detail: impl Into<String>) {
        self.steps.push(Step {
            step,
            outcome: None,
            detail: detail.into(),
        });
    }
    fn end(
        mut self,
        step: StepKind,
        verdict: Verdict,
        risk: Risk,
        reason: String,
        rule: Option<RuleRef>,
        scopes: Vec<Scope>,
    ) -> Outcome {
        self.steps.push(Step {
            step,
            outcome: Some(verdict),
            detail: reason.clone(),
        });
        Outcome {
            decision: Decision {
                decision: verdict,
                risk,
                reason,
                rule,
                steps: self.steps,
            },
            scopes,
            network: false,
        }
    }
}

fn rule_ref(r: &CompiledRule) -> RuleRef {
    RuleRef {
        id: r.id().to_string(),
        layer: r.layer,
    }
}

fn rule_reason(r: &CompiledRule, verb: &str) -> String {
    match &r.rule.description {
        Some(d) if !d.trim().is_empty() => {
            format!("{verb} by {} rule {:?}: {d}", r.layer.as_str(), r.id())
        }
        _ => format!("{verb} by {} rule {:?}", r.layer.as_str(), r.id()),
    }
}

/// The risk of a call before rules: the tool's own, the command's for `exec_cmd`, raised for
/// paths outside the root and for unconfined commands.
pub fn risk_of(facts: &CallFacts<'_>, base: Risk, settings: &PolicySettings<'_>) -> Risk {
    // A secret read goes into a chat on someone else's server: never safe, never auto.
    if facts.paths.iter().any(PathFact::sensitive_read) {
        return Risk::Dangerous;
    }
    risk_apart_from_secrets(facts, base, settings)
}

/// The risk of what the call does, leaving aside that it reads a secret: what a rule naming
/// the secret may not lift (`sed -n '1e make' .ssh/known_hosts` stays dangerous).
fn risk_apart_from_secrets(
    facts: &CallFacts<'_>,
    base: Risk,
    settings: &PolicySettings<'_>,
) -> Risk {
    let mut risk = match (facts.analysis, facts.browser) {
        (Some(a), _) => a.risk,
        (None, Some(b)) => b.risk.max(base),
        // A browser call judged without a look at its page (`check`) is never `safe`.
        (None, None) if facts.tool.is_browser() => base.max(Risk::Moderate),
        (None, None) => base,
    };
    if facts.paths.iter().any(|p| !p.inside) {
        risk = risk.max(Risk::Moderate);
    }
    if facts.tool == ToolName::ExecCmd
        && settings.sandbox == SandboxMode::WorkspaceWrite
        && !settings.exec_confined
    {
        risk = Risk::Dangerous;
    }
    risk
}

/// Run the pipeline of DESIGN §5.1 (steps 2–11; validation happened before).
pub fn decide(
    facts: &CallFacts<'_>,
    base: Risk,
    snap: &Snapshot,
    grants: &[CompiledRule],
    settings: &PolicySettings<'_>,
) -> Outcome {
    let mut out = decide_inner(facts, base, snap, grants, settings);
    if facts.tool == ToolName::ExecCmd && out.decision.decision == Verdict::Allow {
        let rel_paths: Vec<String> = facts.paths.iter().map(|p| p.rel.clone()).collect();
        let subject = Subject {
            tool: facts.tool,
            paths: &rel_paths,
            parts: facts.analysis.map(|a| a.parts.as_slice()).unwrap_or(&[]),
            parsed: facts.analysis.is_none_or(|a| a.parse_error.is_none()),
            origin: None,
        };
        // Trusted file layers, and this conversation's grants (the person's own answers).
        out.network = snap.allow.grants_network(&subject)
            || grants
                .iter()
                .any(|r| r.rule.network && r.covers_all(&subject));
    }
    out
}

fn decide_inner(
    facts: &CallFacts<'_>,
    base: Risk,
    snap: &Snapshot,
    grants: &[CompiledRule],
    settings: &PolicySettings<'_>,
) -> Outcome {
    let risk = risk_of(facts, base, settings);
    let mut t = Trace { steps: Vec::new() };
    let all_scopes = || {
        let mut s = vec![Scope::Once];
        if facts.session.is_some() {
            s.push(Scope::Session);
        }
        s.extend([Scope::Project, Scope::Global]);
        s
    };

    // 4, checked first. Catastrophic commands are denied like jail violations are (nothing
    // overrides either), so the order does not change any outcome — but "catastrophic" tells
    // the person and the model far more than "writes outside the root" does for `rm -rf ~`.
    if let Some(why) = facts.analysis.and_then(|a| a.catastrophic.as_ref()) {
        return t.end(
            StepKind::Catastrophic,
            Verdict::Deny,
            Risk::Dangerous,
            format!("catastrophic command: {why}; this is never allowed"),
            None,
            vec![],
        );
    }

    // Pages no browser tool acts on (the browser's own, local files, extension stores),
    // whatever the rules say (DESIGN §8.3).
    if let Some(why) = facts.browser.and_then(|b| b.never.as_ref()) {
        return t.end(
            StepKind::Protected,
            Verdict::Deny,
            Risk::Dangerous,
            format!("{why}; this is never allowed"),
            None,
            vec![],
        );
    }
    if facts.tool.is_browser() && facts.browser.is_none() {
        // `check` cannot look at the tab: say what the call would do without claiming it safe.
        t.pass(
            StepKind::Validate,
            "the page is not known here (the extension looks at it when the call runs)",
        );
    }

    // ground-link's own state, in every mode and whatever the answer (DESIGN §4): checked
    // before the jail so that full-access and a root holding the config change nothing.
    if let Some(p) = facts
        .paths
        .iter()
        .find(|p| p.class == Some(PathClass::OwnState))
    {
        return t.end(
            StepKind::Protected,
            Verdict::Deny,
            Risk::Dangerous,
            Protection::own_state_reason(&p.shown),
            None,
            vec![],
        );
    }

    // 2. The jail.
    if let Some(e) = facts.path_errors.first() {
        return t.end(StepKind::Jail, Verdict::Deny, risk, e.clone(), None, vec![]);
    }
    for p in facts.paths {
        // Reading outside through a command is not the jail's call (the classifier already
        // made it not-safe); every other outside path is, unless the user chose full-access.
        if !p.inside && settings.sandbox != SandboxMode::FullAccess && (p.write || !p.from_command)
        {
            let what = if p.write { "writes" } else { "uses" };
            return t.end(
                StepKind::Jail,
                Verdict::Deny,
                risk,
                format!(
                    "the call {what} {:?}, which is outside the sandbox root; use a path inside it",
                    p.shown
                ),
                None,
                vec![],
            );
        }
    }
    t.pass(
        StepKind::Jail,
        "every path resolves inside the sandbox root",
    );

    // 3. Sandbox mode and protected paths.
    if settings.sandbox == SandboxMode::ReadOnly {
        let writes = matches!(facts.tool, ToolName::WriteFile | ToolName::EditFile);
        if writes || (facts.tool == ToolName::ExecCmd && risk != Risk::Safe) {
            // A command that is read-only by itself may still be refused for a secret it
            // reads (or a root too large to check for them): say which.
            let secret = facts
                .paths
                .iter()
                .find(|p| p.sensitive_read())
                .map(|p| format!(" ({:?} looks like a secret)", p.shown))
                .unwrap_or_default();
            return t.end(
                StepKind::Sandbox,
                Verdict::Deny,
                risk,
                format!(
                    "the sandbox is read-only: only read-only tools and commands may run{secret}"
                ),
                None,
                vec![],
            );
        }
    }
    t.pass(
        StepKind::Sandbox,
        format!("sandbox mode {}", settings.sandbox.as_str()),
    );
    let mut force_ask = false;
    let mut force_why =
        "a protected path is written: no rule, grant or mode skips the question".to_string();
    if let (ToolName::ExecCmd, Some(why)) = (facts.tool, settings.exec_must_ask) {
        force_ask = true;
        force_why = format!("every exec_cmd asks here: {why}");
        t.pass(StepKind::Sandbox, force_why.clone());
    }
    // A call the person could not tell from page text (the extension's generic fallback): a
    // page could have planted it and arranged the confirming click, so only the person's answer
    // in ground-link's own dialog runs it. Deny rules below still deny; nothing after them
    // (safe, allow rules, grants, mode) may skip the question.
    if let Some(p) = facts.provenance {
        force_ask = true;
        force_why = p.why_ask().to_string();
        t.pass(StepKind::Validate, force_why.clone());
    }
    if let Some(why) = facts.browser.and_then(|b| b.must_ask.as_ref()) {
        force_ask = true;
        force_why = why.clone();
        t.pass(StepKind::Protected, force_why.clone());
    }
    if let Some(p) = facts.paths.iter().find(|p| p.write && p.protected()) {
        if settings.sandbox != SandboxMode::FullAccess {
            return t.end(
                StepKind::Protected,
                Verdict::Deny,
                risk,
                format!(
                    "{:?} is a protected path (it can make code run later or change ground-link's rules); it stays read-only in {}",
                    p.shown,
                    settings.sandbox.as_str()
                ),
                None,
                vec![],
            );
        }
        force_ask = true;
        force_why =
            "a protected path is written: no rule, grant or mode skips the question".to_string();
        t.pass(
            StepKind::Protected,
            format!(
                "{:?} is protected: the person must approve this call itself",
                p.shown
            ),
        );
    }

    let rel_paths: Vec<String> = facts.paths.iter().map(|p| p.rel.clone()).collect();
    let parts = facts.analysis.map(|a| a.parts.as_slice()).unwrap_or(&[]);
    let subject = Subject {
        tool: facts.tool,
        paths: &rel_paths,
        parts,
        parsed: facts.analysis.is_none_or(|a| a.parse_error.is_none()),
        origin: facts.browser.and_then(|b| b.origin.as_deref()),
    };

    // 5. Deny rules, every layer (an untrusted project file may still forbid).
    if let Some(r) = snap.deny.first_matching_any(&subject) {
        return t.end(
            StepKind::DenyRule,
            Verdict::Deny,
            risk,
            rule_reason(r, "denied"),
            Some(rule_ref(r)),
            vec![],
        );
    }
    // 6. Ask rules.
    let secret = facts.paths.iter().find(|p| p.sensitive_read());
    // A secret is opened by a rule that names it, which the person writes on purpose; the
    // dialog's scoped answers would propose folder-wide rules, so it offers only "once".
    let scopes = if force_ask || secret.is_some() {
        vec![Scope::Once]
    } else {
        all_scopes()
    };
    if let Some(r) = snap.ask.first_matching_any(&subject) {
        return t.end(
            StepKind::AskRule,
            Verdict::Ask,
            risk,
            rule_reason(r, "must be asked"),
            Some(rule_ref(r)),
            scopes,
        );
    }
    if let Some(why) = snap.degraded() {
        return t.end(StepKind::Default, Verdict::Ask, risk, why, None, scopes);
    }
    if force_ask {
        return t.end(
            StepKind::Protected,
            Verdict::Ask,
            risk,
            force_why,
            None,
            scopes,
        );
    }

    // 7. Classified safe.
    if risk == Risk::Safe {
        let detail = match facts.analysis {
            Some(_) => "every part of the command is read-only inside the sandbox".to_string(),
            None => format!("{} is read-only", facts.tool),
        };
        return t.end(
            StepKind::Classify,
            Verdict::Allow,
            risk,
            detail,
            None,
            scopes,
        );
    }
    let why_not_safe = facts
        .analysis
        .map(|a| a.reasons.join("; "))
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| format!("{} changes files", facts.tool));
    t.pass(
        StepKind::Classify,
        format!("{}: {why_not_safe}", risk.as_str()),
    );

    // A secret is read only by a rule whose path glob names the file, or by "allow once".
    if let Some(p) = secret {
        let naming = |r: &&CompiledRule| {
            r.rule
                .matches
                .path_glob
                .as_deref()
                .is_some_and(glob_names_a_file)
        };
        let by_rule = snap
            .allow
            .first_covering_all(&subject)
            .filter(naming)
            .or_else(|| {
                grants
                    .iter()
                    .filter(|r| r.covers_all(&subject))
                    .find(naming)
            });
        // A rule naming the file opens it to read-only commands (`cat`, `grep`, `head`), and
        // nothing more: `sed -n '1e make' .ssh/known_hosts` runs code, and a rule that names
        // a file says nothing about programs. A rule that also names the program
        // (`commandPrefix`) is the person's word on that program.
        let own_risk = risk_apart_from_secrets(facts, base, settings);
        match by_rule {
            Some(r) if own_risk != Risk::Safe && r.rule.matches.command_prefix.is_none() => {
                return t.end(
                    StepKind::AllowRule,
                    Verdict::Ask,
                    risk,
                    format!(
                        "{} rule {:?} names this secret, which opens it to read-only commands; \
                         this command is {} by itself ({why_not_safe}) and the rule does not \
                         name the program (commandPrefix), so the person decides",
                        r.layer.as_str(),
                        r.id(),
                        own_risk.as_str()
                    ),
                    Some(rule_ref(r)),
                    scopes,
                );
            }
            Some(r) => {
                return t.end(
                    StepKind::AllowRule,
                    Verdict::Allow,
                    risk,
                    rule_reason(r, "allowed (a rule names this secret)"),
                    Some(rule_ref(r)),
                    scopes,
                );
            }
            None => {}
        }
        return t.end(
            StepKind::Default,
            Verdict::Ask,
            risk,
            format!(
                "this looks like a secret: {:?} is in the sensitive class (keys, credentials, \
                 .env files); reading it sends it to the model, so only the person or a rule \
                 naming the file allows it",
                p.shown
            ),
            None,
            scopes,
        );
    }

    // A command that reads outside the root is never waved through by a rule, grant or mode.
    let reads_outside = facts.paths.iter().any(|p| p.from_command && !p.inside);
    if reads_outside {
        return t.end(
            StepKind::Default,
            Verdict::Ask,
            risk,
            format!("the command reads outside the sandbox root ({why_not_safe})"),
            None,
            scopes,
        );
    }

    // 8. Allow rules from trusted layers.
    if let Some(r) = snap.allow.first_covering_all(&subject) {
        return t.end(
            StepKind::AllowRule,
            Verdict::Allow,
            risk,
            rule_reason(r, "allowed"),
            Some(rule_ref(r)),
            scopes,
        );
    }
    if !snap.project_trusted
        && snap
            .project
            .rules
            .iter()
            .any(|r| r.action() == RuleAction::Allow && r.covers_all(&subject))
    {
        t.pass(
            StepKind::AllowRule,
            "a project allow rule matches, but the project file is not trusted; it is ignored",
        );
    }
    // 9. Grants for this conversation.
    if let Some(r) = grants.iter().find(|r| r.covers_all(&subject)) {
        let reason = format!("allowed for this conversation by {:?}", r.id());
        return t.end(
            StepKind::SessionGrant,
            Verdict::Allow,
            risk,
            reason,
            Some(RuleRef {
                id: r.id().to_string(),
                layer: Layer::Session,
            }),
            scopes,
        );
    }
    // 10. Mode auto lets moderate calls through.
    if settings.mode == ApprovalMode::Auto && risk == Risk::Moderate {
        return t.end(
            StepKind::Mode,
            Verdict::Allow,
            risk,
            format!("mode auto allows moderate calls ({why_not_safe})"),
            None,
            scopes,
        );
    }
    // 11. Ask.
    t.end(
        StepKind::Default,
        Verdict::Ask,
        risk,
        format!("{} call needs approval: {why_not_safe}", risk.as_str()),
        None,
        scopes,
    )
}
