//! The validation rules proper: one walk over the parsed card JSON that checks every field
//! against the proto and the rules listed in [`crate::card::validate`](mod@crate::card::validate), collecting every problem
//! with its JSON path (pure, no I/O).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::policy::CardPolicy;
use super::problem::{CardError, CardWarning, MAX_ID_BYTES, MAX_URL_BYTES};
use super::sanitize::is_hidden;
use super::text::{id_chars_ok, literal_matches_parsed, media_type_chars_ok, tenant_problem};
use super::wire::{Path, quote};

/// The shape a security requirement must have in A2A 1.0 (quoted when a card uses another one).
const SECURITY_SHAPE: &str = "{\"schemes\":{\"<name>\":{\"list\":[\"<scope>\"]}}}";

/// How a string field is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Descriptive text: any string, may be empty (sanitised later, for display only).
    Text,
    /// Descriptive text that must not be empty (names).
    Name,
    /// Identifier: non-empty, ≤ MAX_ID_BYTES, no whitespace, control or hidden characters.
    Id,
    /// Optional identifier that may be empty (`bearerFormat`); else as `Id`.
    IdOrEmpty,
    /// An interface's `tenant`: may be empty ("" means unset in proto3); else bounded like `Id`
    /// and one path-safe segment ([`tenant_problem`]).
    Tenant,
    /// Skill id: as `Id`, except that single interior U+0020 spaces are allowed.
    SkillId,
    /// `Major.Minor`.
    ProtocolVersion,
    /// Media type: non-empty, ≤ MAX_ID_BYTES, no whitespace/hidden characters.
    MediaType,
    /// URL of an interface of the given binding (https; http if allowed; gRPC may be host:port).
    InterfaceUrl,
    /// URL a client would call for auth (https; http if allowed).
    SecurityUrl,
    /// URL that is never fetched (http or https).
    DescriptiveUrl,
    /// Any absolute URI (extension identifiers).
    Uri,
    /// base64url without padding.
    Base64Url,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A member of an object, `null` counting as absent (ProtoJSON).
fn get<'v>(m: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    m.get(key).filter(|v| !v.is_null())
}

pub(crate) struct Checker<'p> {
    pub policy: &'p CardPolicy,
    pub errors: Vec<CardError>,
    pub warnings: Vec<CardWarning>,
}

impl Checker<'_> {
    /// Checks a whole card, appending to `errors` and `warnings`.
    pub fn card(&mut self, v: &Value) {
        let root = Path::ROOT;
        let Some(m) = self.object(v, &root) else {
            return;
        };
        self.proto_names(
            m,
            &root,
            &[
                "documentationUrl",
                "iconUrl",
                "securitySchemes",
                "securityRequirements",
            ],
        );
        if self.version_03(m) {
            return;
        }

        self.req_str(m, "name", &root, Kind::Name);
        self.req_str(m, "description", &root, Kind::Text);
        self.req_str(m, "version", &root, Kind::Id);
        self.opt_str(m, "documentationUrl", &root, Kind::DescriptiveUrl);
        self.opt_str(m, "iconUrl", &root, Kind::DescriptiveUrl);

        if let Some(arr) = self.req_array(m, "supportedInterfaces", &root) {
            let p = root.key("supportedInterfaces");
            for (i, it) in arr.iter().enumerate() {
                self.interface(it, &p.index(i));
            }
        }
        if let Some(v) = get(m, "provider") {
            let p = root.key("provider");
            if let Some(pm) = self.object(v, &p) {
                self.req_str(pm, "url", &p, Kind::DescriptiveUrl);
                self.req_str(pm, "organization", &p, Kind::Name);
            }
        }
        match get(m, "capabilities") {
            None => self.missing(m, "capabilities", &root),
            Some(v) => self.capabilities(v, &root.key("capabilities")),
        }
        let schemes = self.security_schemes(m, &root);
        self.security_requirements(m, &root, schemes);
        for key in ["defaultInputModes", "defaultOutputModes"] {
            if let Some(arr) = self.req_array(m, key, &root) {
                self.str_items(arr, &root.key(key), Kind::MediaType);
            }
        }
        self.skills(m, &root, schemes);
        self.signatures(m, &root);
    }

    /// 0.3 fields beside a non-empty `supportedInterfaces` are warned about and ignored: the
    /// SDKs' rule is that `supportedInterfaces` wins. (A card with only the 0.3 shape never gets
    /// here: `card::validate` checks it against the 0.3 schema and converts it first, see
    /// `card::v03`.) Whether the card was refused.
    fn version_03(&mut self, m: &Map<String, Value>) -> bool {
        let has_interfaces =
            matches!(m.get("supportedInterfaces"), Some(Value::Array(a)) if !a.is_empty());
        let markers: Vec<String> = [
            "url",
            "preferredTransport",
            "additionalInterfaces",
            "protocolVersion",
        ]
        .into_iter()
        .filter(|k| m.contains_key(*k))
        .map(|k| match (k, m.get(k)) {
            ("protocolVersion", Some(Value::String(s))) => format!("protocolVersion {}", quote(s)),
            _ => k.to_string(),
        })
        .collect();
        if !has_interfaces {
            return false;
        }
        for k in markers {
            self.warnings.push(CardWarning {
                path: k.split(' ').next().unwrap_or_default().to_string(),
                message: "0.3 field ignored: the card has both shapes and, as the official SDKs \
                          do, is read as 1.0 (supportedInterfaces wins)"
                    .into(),
            });
        }
        false
    }

    /// `securitySchemes`, each checked; the map, when it is one.
    fn security_schemes<'v>(
        &mut self,
        m: &'v Map<String, Value>,
        root: &Path<'_>,
    ) -> Option<&'v Map<String, Value>> {
        let mut schemes: Option<&Map<String, Value>> = None;
        if let Some(v) = get(m, "securitySchemes") {
            let p = root.key("securitySchemes");
            if let Some(sm) = self.object(v, &p) {
                schemes = Some(sm);
                for (name, s) in sm {
                    let sp = p.key(name);
                    self.id_text(name, &sp, "scheme name");
                    self.security_scheme(s, &sp);
                }
            }
        }
        schemes
    }

    /// `skills`, each checked, ids unique.
    fn skills(
        &mut self,
        m: &Map<String, Value>,
        root: &Path<'_>,
        schemes: Option<&Map<String, Value>>,
    ) {
        if let Some(arr) = self.req_array(m, "skills", root) {
            let p = root.key("skills");
            let mut seen: HashMap<&str, usize> = HashMap::with_capacity(arr.len());
            for (i, s) in arr.iter().enumerate() {
                let sp = p.index(i);
                if let Some(id) = self.skill(s, &sp, schemes)
                    && let Some(first) = seen.insert(id, i)
                {
                    seen.insert(id, first);
                    self.errors.push(CardError::DuplicateSkillId {
                        path: sp.key("id").to_string(),
                        id: quote(id),
                        first,
                    });
                }
            }
        }
    }

    /// `signatures`: each a JWS in the flattened JSON form.
    fn signatures(&mut self, m: &Map<String, Value>, root: &Path<'_>) {
        if let Some(v) = get(m, "signatures") {
            let p = root.key("signatures");
            if let Some(arr) = self.array(v, &p) {
                for (i, s) in arr.iter().enumerate() {
                    let sp = p.index(i);
                    if let Some(sm) = self.object(s, &sp) {
                        self.req_str(sm, "protected", &sp, Kind::Base64Url);
                        self.req_str(sm, "signature", &sp, Kind::Base64Url);
                        if let Some(h) = get(sm, "header") {
                            self.object(h, &sp.key("header"));
                        }
                    }
                }
            }
        }
    }

    fn interface(&mut self, v: &Value, p: &Path<'_>) {
        let Some(m) = self.object(v, p) else { return };
        let binding = self.req_str(m, "protocolBinding", p, Kind::Id);
        self.req_str(m, "protocolVersion", p, Kind::ProtocolVersion);
        self.opt_str(m, "tenant", p, Kind::Tenant);
        let up = p.key("url");
        match get(m, "url") {
            None => self.missing(m, "url", p),
            Some(Value::String(s)) => {
                let grpc = binding.is_some_and(|b| b.eq_ignore_ascii_case("GRPC"));
                if grpc && !s.contains("://") {
                    self.grpc_authority(s, &up);
                } else {
                    self.string(s, &up, Kind::InterfaceUrl);
                }
            }
            Some(other) => self.wrong(&up, "string", other),
        }
    }

    fn capabilities(&mut self, v: &Value, p: &Path<'_>) {
        let Some(m) = self.object(v, p) else { return };
        self.proto_names(m, p, &["pushNotifications", "extendedAgentCard"]);
        for key in ["streaming", "pushNotifications", "extendedAgentCard"] {
            self.opt_bool(m, key, p);
        }
        let Some(v) = get(m, "extensions") else {
            return;
        };
        let ep = p.key("extensions");
        let Some(arr) = self.array(v, &ep) else {
            return;
        };
        let mut seen: HashSet<&str> = HashSet::with_capacity(arr.len());
        for (i, e) in arr.iter().enumerate() {
            let xp = ep.index(i);
            let Some(em) = self.object(e, &xp) else {
                continue;
            };
            if let Some(uri) = self.req_str(em, "uri", &xp, Kind::Uri)
                && !seen.insert(uri)
            {
                self.errors.push(CardError::DuplicateExtension {
                    path: xp.key("uri").to_string(),
                    uri: quote(uri),
                });
            }
            self.opt_str(em, "description", &xp, Kind::Text);
            self.opt_bool(em, "required", &xp);
            if let Some(pv) = get(em, "params") {
                self.object(pv, &xp.key("params"));
            }
        }
    }

    fn skill<'v>(
        &mut self,
        v: &'v Value,
        p: &Path<'_>,
        schemes: Option<&Map<String, Value>>,
    ) -> Option<&'v str> {
        let m = self.object(v, p)?;
        self.proto_names(m, p, &["inputModes", "outputModes", "securityRequirements"]);
        let id = self.req_str(m, "id", p, Kind::SkillId);
        self.req_str(m, "name", p, Kind::Name);
        self.req_str(m, "description", p, Kind::Text);
        if let Some(arr) = self.req_array(m, "tags", p) {
            self.str_items(arr, &p.key("tags"), Kind::Text);
        }
        if let Some(ev) = get(m, "examples") {
            let xp = p.key("examples");
            if let Some(arr) = self.array(ev, &xp) {
                self.str_items(arr, &xp, Kind::Text);
            }
        }
        for key in ["inputModes", "outputModes"] {
            if let Some(mv) = get(m, key) {
                let mp = p.key(key);
                if let Some(arr) = self.array(mv, &mp) {
                    self.str_items(arr, &mp, Kind::MediaType);
                }
            }
        }
        self.security_requirements(m, p, schemes);
        id
    }

    /// The one member of a ProtoJSON oneof present in `m`, or `None` after recording a
    /// [`CardError::OneOf`]. `null` members count as present, so `{"a":null,"b":{…}}` is refused
    /// as ambiguous rather than read as `b`.
    fn one_of(
        &mut self,
        m: &serde_json::Map<String, Value>,
        p: &Path<'_>,
        members: &'static [&'static str],
    ) -> Option<&'static str> {
        let found: Vec<&'static str> = members
            .iter()
            .copied()
            .filter(|k| m.contains_key(*k))
            .collect();
        if let [one] = found[..] {
            return Some(one);
        }
        self.errors.push(CardError::OneOf {
            path: p.to_string(),
            found: found.iter().map(|s| s.to_string()).collect(),
            allowed: members,
        });
        None
    }

    fn security_scheme(&mut self, v: &Value, p: &Path<'_>) {
        const MEMBERS: &[&str] = &[
            "apiKeySecurityScheme",
            "httpAuthSecurityScheme",
            "oauth2SecurityScheme",
            "openIdConnectSecurityScheme",
            "mtlsSecurityScheme",
        ];
        let Some(m) = self.object(v, p) else { return };
        if !MEMBERS.iter().any(|k| m.contains_key(*k)) && m.contains_key("type") {
            self.errors.push(CardError::Security03 {
                path: p.to_string(),
                what: "security scheme with a \"type\" discriminator",
                expected: "one member key such as {\"httpAuthSecurityScheme\":{\"scheme\":\"bearer\"}}",
            });
            return;
        }
        let Some(key) = self.one_of(m, p, MEMBERS) else {
            return;
        };
        let sp = p.key(key);
        let Some(sm) = self.object(&m[key], &sp) else {
            return;
        };
        self.opt_str(sm, "description", &sp, Kind::Text);
        match key {
            "apiKeySecurityScheme" => {
                if let Some(loc) = self.req_str(sm, "location", &sp, Kind::Id)
                    && !matches!(loc, "query" | "header" | "cookie")
                {
                    self.errors.push(CardError::UnknownEnum {
                        path: sp.key("location").to_string(),
                        value: quote(loc),
                        allowed: "\"query\", \"header\", \"cookie\"",
                    });
                }
                self.req_str(sm, "name", &sp, Kind::Id);
            }
            "httpAuthSecurityScheme" => {
                self.req_str(sm, "scheme", &sp, Kind::Id);
                self.opt_str(sm, "bearerFormat", &sp, Kind::IdOrEmpty);
            }
            "oauth2SecurityScheme" => {
                match get(sm, "flows") {
                    None => self.missing(sm, "flows", &sp),
                    Some(f) => self.oauth_flows(f, &sp.key("flows")),
                }
                self.opt_str(sm, "oauth2MetadataUrl", &sp, Kind::SecurityUrl);
            }
            "openIdConnectSecurityScheme" => {
                self.req_str(sm, "openIdConnectUrl", &sp, Kind::SecurityUrl);
            }
            _ => {} // mtlsSecurityScheme: description only.
        }
    }

    fn oauth_flows(&mut self, v: &Value, p: &Path<'_>) {
        const MEMBERS: &[&str] = &[
            "authorizationCode",
            "clientCredentials",
            "deviceCode",
            "implicit",
            "password",
        ];
        let Some(m) = self.object(v, p) else { return };
        let Some(key) = self.one_of(m, p, MEMBERS) else {
            return;
        };
        let fp = p.key(key);
        let Some(fm) = self.object(&m[key], &fp) else {
            return;
        };
        let required: &[&str] = match key {
            "authorizationCode" => &["authorizationUrl", "tokenUrl"],
            "clientCredentials" => &["tokenUrl"],
            "deviceCode" => &["deviceAuthorizationUrl", "tokenUrl"],
            "implicit" => &["authorizationUrl"],
            _ => &["tokenUrl"], // password
        };
        for k in required {
            self.req_str(fm, k, &fp, Kind::SecurityUrl);
        }
        self.opt_str(fm, "refreshUrl", &fp, Kind::SecurityUrl);
        // A REQUIRED map: present, an object of strings; empty is allowed (a flow with no scopes).
        let sp = fp.key("scopes");
        match get(fm, "scopes") {
            None => self.missing(fm, "scopes", &fp),
            Some(sv) => {
                if let Some(sm) = self.object(sv, &sp) {
                    for (scope, d) in sm {
                        let scp = sp.key(scope);
                        self.id_text(scope, &scp, "scope");
                        if !d.is_string() {
                            self.wrong(&scp, "string", d);
                        }
                    }
                }
            }
        }
        if key == "authorizationCode" {
            self.opt_bool(fm, "pkceRequired", &fp);
        }
    }

    /// `securityRequirements` of the card or a skill: `[{"schemes":{name:{"list":[scope…]}}}]`.
    fn security_requirements(
        &mut self,
        m: &Map<String, Value>,
        p: &Path<'_>,
        schemes: Option<&Map<String, Value>>,
    ) {
        if m.contains_key("security") && !m.contains_key("securityRequirements") {
            self.errors.push(CardError::Security03 {
                path: p.key("security").to_string(),
                what: "\"security\" member",
                expected: "\"securityRequirements\": [{\"schemes\":{\"<name>\":{\"list\":[\"<scope>\"]}}}]",
            });
        }
        let Some(v) = get(m, "securityRequirements") else {
            return;
        };
        let rp = p.key("securityRequirements");
        let Some(arr) = self.array(v, &rp) else {
            return;
        };
        for (i, r) in arr.iter().enumerate() {
            self.security_requirement(r, &rp.index(i), schemes);
        }
    }

    /// One entry of `securityRequirements`: a `schemes` map of declared scheme names to scopes.
    fn security_requirement(
        &mut self,
        r: &Value,
        ip: &Path<'_>,
        schemes: Option<&Map<String, Value>>,
    ) {
        let Some(rm) = self.object(r, ip) else {
            return;
        };
        let Some(sv) = rm.get("schemes") else {
            if !rm.is_empty() {
                // `{"oauth": ["read"]}`: the OpenAPI / 0.3 shape.
                self.errors.push(CardError::Security03 {
                    path: ip.to_string(),
                    what: "security requirement",
                    expected: SECURITY_SHAPE,
                });
            }
            return;
        };
        let sp = ip.key("schemes");
        let Some(sm) = self.object(sv, &sp) else {
            return;
        };
        for (name, list) in sm {
            let np = sp.key(name);
            if schemes.is_none_or(|s| !s.contains_key(name)) {
                self.errors.push(CardError::UndeclaredScheme {
                    path: np.to_string(),
                    scheme: quote(name),
                });
            }
            self.scope_list(list, &np);
        }
    }

    /// The scopes one requirement asks of one scheme: `{"list": ["<scope>", ...]}`.
    fn scope_list(&mut self, list: &Value, np: &Path<'_>) {
        match list {
            Value::Array(_) => self.errors.push(CardError::Security03 {
                path: np.to_string(),
                what: "scope list (a bare array)",
                expected: SECURITY_SHAPE,
            }),
            Value::Object(lm) => {
                // Only `list` is allowed: a misspelt `"lists"` would otherwise mean
                // "no scopes", silently widening the requirement (a2a-lf refuses it too).
                if let Some(k) = lm.keys().find(|k| *k != "list") {
                    self.errors.push(CardError::UnknownMember {
                        path: np.key(k).to_string(),
                        allowed: "list",
                    });
                }
                if let Some(lv) = lm.get("list") {
                    let lp = np.key("list");
                    if let Some(items) = self.array(lv, &lp) {
                        for (j, s) in items.iter().enumerate() {
                            let xp = lp.index(j);
                            match s {
                                Value::String(s) => self.id_text(s, &xp, "scope"),
                                other => self.wrong(&xp, "string", other),
                            }
                        }
                    }
                }
            }
            other => self.wrong(np, "object", other),
        }
    }

    // --- primitives -------------------------------------------------------------------------

    /// Reports REQUIRED `key` of `m` as missing, naming its proto (snake_case) spelling when the
    /// card used that instead: ProtoJSON printers emit lowerCamelCase, and this validator reads
    /// only the JSON names (A2A §5.5), so such a card is refused with a message that says why.
    fn missing(&mut self, m: &Map<String, Value>, key: &str, p: &Path<'_>) {
        let path = p.key(key).to_string();
        let snake = crate::types::proto_name::proto_field_name(key);
        if snake != key && m.contains_key(&snake) {
            self.errors
                .push(CardError::ProtoName { path, proto: snake });
        } else {
            self.errors.push(CardError::Missing { path });
        }
    }

    /// Refuses optional fields spelt with their proto (snake_case) name, which would otherwise be
    /// ignored as unknown members and silently change the meaning (e.g. a skill's `input_modes`
    /// would make it inherit the card defaults).
    fn proto_names(&mut self, m: &Map<String, Value>, p: &Path<'_>, optional: &[&str]) {
        for key in m.keys().filter(|k| k.contains('_')) {
            let mut camel = String::with_capacity(key.len());
            let mut up = false;
            for c in key.chars() {
                if c == '_' {
                    up = true;
                } else if up {
                    camel.push(c.to_ascii_uppercase());
                    up = false;
                } else {
                    camel.push(c);
                }
            }
            if optional.contains(&camel.as_str()) && !m.contains_key(&camel) {
                self.errors.push(CardError::ProtoName {
                    path: p.key(&camel).to_string(),
                    proto: key.clone(),
                });
            }
        }
    }

    fn opt_bool(&mut self, m: &Map<String, Value>, key: &str, p: &Path<'_>) {
        if let Some(b) = get(m, key)
            && !b.is_boolean()
        {
            self.wrong(&p.key(key), "boolean", b);
        }
    }

    fn wrong(&mut self, p: &Path<'_>, expected: &'static str, found: &Value) {
        self.errors.push(CardError::WrongType {
            path: p.to_string(),
            expected,
            found: type_name(found),
        });
    }

    fn object<'v>(&mut self, v: &'v Value, p: &Path<'_>) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            other => {
                self.wrong(p, "object", other);
                None
            }
        }
    }

    fn array<'v>(&mut self, v: &'v Value, p: &Path<'_>) -> Option<&'v Vec<Value>> {
        match v {
            Value::Array(a) => Some(a),
            other => {
                self.wrong(p, "array", other);
                None
            }
        }
    }

    /// A REQUIRED repeated field: present, an array, at least one element.
    fn req_array<'v>(
        &mut self,
        m: &'v Map<String, Value>,
        key: &str,
        p: &Path<'_>,
    ) -> Option<&'v Vec<Value>> {
        let kp = p.key(key);
        match get(m, key) {
            None => {
                self.missing(m, key, p);
                None
            }
            Some(v) => {
                let a = self.array(v, &kp)?;
                if a.is_empty() {
                    self.errors.push(CardError::Empty {
                        path: kp.to_string(),
                    });
                }
                Some(a)
            }
        }
    }

    fn str_items(&mut self, arr: &[Value], p: &Path<'_>, kind: Kind) {
        for (i, v) in arr.iter().enumerate() {
            match v {
                Value::String(s) => self.string(s, &p.index(i), kind),
                other => self.wrong(&p.index(i), "string", other),
            }
        }
    }

    fn req_str<'v>(
        &mut self,
        m: &'v Map<String, Value>,
        key: &str,
        p: &Path<'_>,
        kind: Kind,
    ) -> Option<&'v str> {
        match get(m, key) {
            None => {
                self.missing(m, key, p);
                None
            }
            Some(Value::String(s)) => {
                self.string(s, &p.key(key), kind);
                Some(s)
            }
            Some(other) => {
                self.wrong(&p.key(key), "string", other);
                None
            }
        }
    }

    fn opt_str<'v>(
        &mut self,
        m: &'v Map<String, Value>,
        key: &str,
        p: &Path<'_>,
        kind: Kind,
    ) -> Option<&'v str> {
        match get(m, key) {
            None => None,
            Some(Value::String(s)) => {
                self.string(s, &p.key(key), kind);
                Some(s)
            }
            Some(other) => {
                self.wrong(&p.key(key), "string", other);
                None
            }
        }
    }

    /// Checks an identifier-like string (scheme names, scopes): non-empty, bounded, no hidden chars.
    fn id_text(&mut self, s: &str, p: &Path<'_>, _what: &str) {
        self.string(s, p, Kind::Id);
    }

    fn string(&mut self, s: &str, p: &Path<'_>, kind: Kind) {
        match kind {
            Kind::Text => {}
            Kind::Name => {
                if s.trim().is_empty() {
                    self.errors.push(CardError::Empty {
                        path: p.to_string(),
                    });
                }
            }
            Kind::Id | Kind::IdOrEmpty | Kind::SkillId => self.identifier(s, p, kind),
            Kind::Tenant => {
                if !s.is_empty()
                    && self.bounded(s, p, MAX_ID_BYTES)
                    && let Some(reason) = tenant_problem(s)
                {
                    self.errors.push(CardError::BadTenant {
                        path: p.to_string(),
                        value: quote(s),
                        reason,
                    });
                }
            }
            Kind::ProtocolVersion => {
                if crate::types::ProtocolVersion::parse(s).is_err() {
                    self.errors.push(CardError::BadProtocolVersion {
                        path: p.to_string(),
                        value: quote(s),
                    });
                }
            }
            Kind::MediaType => self.media_type(s, p),
            Kind::Base64Url => self.base64url(s, p),
            Kind::InterfaceUrl | Kind::SecurityUrl | Kind::DescriptiveUrl | Kind::Uri => {
                if s.is_empty() {
                    self.errors.push(CardError::Empty {
                        path: p.to_string(),
                    });
                } else if self.bounded(s, p, MAX_URL_BYTES) {
                    self.url(s, p, kind);
                }
            }
        }
    }

    /// An identifier (`Id`, `IdOrEmpty`, `SkillId`): non-empty unless `IdOrEmpty`, bounded, and
    /// free of characters that would make two different ids look alike.
    fn identifier(&mut self, s: &str, p: &Path<'_>, kind: Kind) {
        if s.is_empty() {
            if kind != Kind::IdOrEmpty {
                self.errors.push(CardError::Empty {
                    path: p.to_string(),
                });
            }
        } else if self.bounded(s, p, MAX_ID_BYTES) && !id_chars_ok(s, kind == Kind::SkillId) {
            self.bad_chars(s, p, "whitespace, control, bidi or zero-width characters");
        }
    }

    /// A media type: non-empty, bounded, clean; one without `/` is only warned about.
    fn media_type(&mut self, s: &str, p: &Path<'_>) {
        if s.is_empty() {
            self.errors.push(CardError::Empty {
                path: p.to_string(),
            });
        } else if self.bounded(s, p, MAX_ID_BYTES) {
            if !media_type_chars_ok(s) {
                self.bad_chars(s, p, "whitespace, control, bidi or zero-width characters");
            } else if !s.contains('/') {
                self.warnings.push(CardWarning {
                    path: p.to_string(),
                    message: format!("{} is not a type/subtype media type", quote(s)),
                });
            }
        }
    }

    /// Unpadded base64url (a JWS `protected` header or `signature`): non-empty, alphabet only.
    fn base64url(&mut self, s: &str, p: &Path<'_>) {
        if s.is_empty() {
            self.errors.push(CardError::Empty {
                path: p.to_string(),
            });
        } else if !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            self.errors.push(CardError::BadBase64Url {
                path: p.to_string(),
            });
        }
    }

    fn bounded(&mut self, s: &str, p: &Path<'_>, limit: usize) -> bool {
        if s.len() > limit {
            self.errors.push(CardError::TooLong {
                path: p.to_string(),
                len: s.len(),
                limit,
            });
            false
        } else {
            true
        }
    }

    fn bad_chars(&mut self, s: &str, p: &Path<'_>, what: &'static str) {
        self.errors.push(CardError::BadChars {
            path: p.to_string(),
            value: quote(s),
            what,
        });
    }

    fn bad_url(&mut self, s: &str, p: &Path<'_>, reason: impl Into<String>) {
        self.errors.push(CardError::BadUrl {
            path: p.to_string(),
            value: quote(s),
            reason: reason.into(),
        });
    }

    fn url(&mut self, s: &str, p: &Path<'_>, kind: Kind) {
        if s.chars().any(|c| c.is_whitespace() || is_hidden(c)) {
            self.bad_chars(s, p, "whitespace, control, bidi or zero-width characters");
            return;
        }
        let u = match url::Url::parse(s) {
            Ok(u) => u,
            Err(e) => return self.bad_url(s, p, format!("not an absolute URL ({e})")),
        };
        if kind == Kind::Uri {
            return;
        }
        if !u.username().is_empty() || u.password().is_some() {
            return self.bad_url(s, p, "URL must not carry credentials (user:password@)");
        }
        let plain_ok = kind == Kind::DescriptiveUrl || self.policy.allow_plain_http;
        // Descriptive URLs are never fetched (only shown, sanitised): an IDN host there is fine.
        if kind != Kind::DescriptiveUrl
            && matches!(u.scheme(), "http" | "https")
            && let Err(why) = literal_matches_parsed(s, &u)
        {
            return self.bad_url(s, p, why);
        }
        match u.scheme() {
            "https" => {}
            "http" if plain_ok => {}
            "http" => {
                return self.bad_url(
                    s,
                    p,
                    "plain http is not allowed (https required; set client.allow_plain_http for loopback tests)",
                );
            }
            other => {
                let only = if plain_ok {
                    "http or https only"
                } else {
                    "https only"
                };
                return self.bad_url(
                    s,
                    p,
                    format!("scheme {} is not allowed ({only})", quote(other)),
                );
            }
        }
        if u.host().is_none() {
            return self.bad_url(s, p, "URL has no host");
        }
        if kind == Kind::InterfaceUrl && u.fragment().is_some() {
            self.bad_url(s, p, "interface URL must not have a #fragment");
        }
    }

    /// A gRPC interface given as a bare `host:port` authority.
    fn grpc_authority(&mut self, s: &str, p: &Path<'_>) {
        if s.is_empty() {
            self.errors.push(CardError::Empty {
                path: p.to_string(),
            });
            return;
        }
        if !self.bounded(s, p, MAX_URL_BYTES) {
            return;
        }
        if s.chars().any(|c| c.is_whitespace() || is_hidden(c)) {
            return self.bad_chars(s, p, "whitespace, control, bidi or zero-width characters");
        }
        let as_url = format!("https://{s}");
        let ok = url::Url::parse(&as_url).is_ok_and(|u| {
            literal_matches_parsed(&as_url, &u).is_ok()
                && u.host().is_some()
                && u.username().is_empty()
                && u.password().is_none()
                && u.path() == "/"
                && u.query().is_none()
                && u.fragment().is_none()
                && !s.contains('/')
        });
        if !ok {
            self.bad_url(
                s,
                p,
                "gRPC interface must be an https URL or a bare host:port",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Checker;
    use crate::card::CardPolicy;
    use crate::card::text::tests::MULTIBYTE_BOUNDARY_URLS;

    #[test]
    fn interface_and_security_urls_with_multibyte_boundaries_are_errors() {
        let policy = CardPolicy::default();
        for s in MULTIBYTE_BOUNDARY_URLS {
            let card = serde_json::json!({
                "supportedInterfaces": [{"url": s, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "securitySchemes": {"o": {"openIdConnectSecurityScheme": {"openIdConnectUrl": s}}},
            });
            let mut c = Checker {
                policy: &policy,
                errors: Vec::new(),
                warnings: Vec::new(),
            };
            c.card(&card);
            let bad: Vec<String> = c
                .errors
                .iter()
                .map(ToString::to_string)
                .filter(|e| e.contains("url") || e.contains("Url"))
                .collect();
            assert_eq!(bad.len(), 2, "{s:?}: {bad:?}");
        }
    }
}
