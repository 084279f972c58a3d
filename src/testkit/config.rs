//! [`ConfigToml`] and [`IntegrationToml`]: gateway config text with defaults, for tests (no I/O
//! beyond [`ConfigToml::parse`], which reads nothing from disk either).

use std::fmt::Write as _;
use std::path::Path;

use crate::config::{Config, ConfigError};

/// A gateway config as TOML text: a head (by default loopback port-0 listeners, a client that
/// speaks JSON-RPC and HTTP+JSON 1.0 over plain HTTP, default data class `internal`), then
/// [`IntegrationToml`] tables.
#[derive(Debug, Clone)]
pub struct ConfigToml {
    head: String,
    tables: String,
}

impl ConfigToml {
    /// The test head with `extensions` as the client's known extensions.
    pub fn new(extensions: &[&str]) -> ConfigToml {
        ConfigToml {
            head: format!(
                "[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n\
                 [client]\nbindings = [\"JSONRPC\", \"HTTP+JSON\"]\nversions = [\"1.0\"]\n\
                 extensions = {}\nallow_plain_http = true\n\
                 [policy]\ndefault_data_class = \"internal\"\n",
                serde_json::to_string(extensions).expect("strings serialise")
            ),
            tables: String::new(),
        }
    }

    /// No head at all: only the tables added (the config's own defaults apply).
    pub fn bare() -> ConfigToml {
        ConfigToml {
            head: String::new(),
            tables: String::new(),
        }
    }

    /// Adds TOML lines after the head (other sections, or keys of `[policy]`).
    pub fn head(mut self, lines: &str) -> Self {
        self.head.push_str(lines);
        self.head.push('\n');
        self
    }

    /// Adds one `[[integrations]]` table.
    pub fn integration(mut self, table: IntegrationToml) -> Self {
        self.tables.push_str(&table.text());
        self
    }

    /// The config text.
    pub fn text(&self) -> String {
        format!("{}{}", self.head, self.tables)
    }

    /// The config, parsed and validated as if read from `path` (relative paths resolve there).
    pub fn parse(&self, path: &Path) -> Result<Config, ConfigError> {
        Config::parse(&self.text(), path)
    }
}

/// One `[[integrations]]` table: by default skill `echo`, data classes `public` and `internal`,
/// the card URL's origin as the one approved origin; `extra` lines add any other key.
#[derive(Debug, Clone)]
pub struct IntegrationToml {
    name: String,
    card: String,
    origins: Vec<String>,
    skills: Vec<String>,
    data_classes: Vec<String>,
    extra: String,
}

impl IntegrationToml {
    /// Integration `name` with its card at `card_url` (an absolute URL).
    pub fn new(name: &str, card_url: &str) -> IntegrationToml {
        let origin = url::Url::parse(card_url)
            .expect("an absolute card URL")
            .origin()
            .ascii_serialization();
        IntegrationToml {
            name: name.to_owned(),
            card: card_url.to_owned(),
            origins: vec![origin],
            skills: vec!["echo".into()],
            data_classes: vec!["public".into(), "internal".into()],
            extra: String::new(),
        }
    }

    /// The approved origins, replacing the card URL's.
    pub fn origins(mut self, origins: &[&str]) -> Self {
        self.origins = origins.iter().map(|o| (*o).to_owned()).collect();
        self
    }

    /// The accepted skills.
    pub fn skills(mut self, ids: &[&str]) -> Self {
        self.skills = ids.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// The allowed data classes.
    pub fn data_classes(mut self, classes: &[&str]) -> Self {
        self.data_classes = classes.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Adds TOML lines to the table (`streaming = "off"`, `tenant = "t"`, …).
    pub fn extra(mut self, lines: &str) -> Self {
        self.extra.push_str(lines);
        self.extra.push('\n');
        self
    }

    /// The table's text, starting on a new line.
    pub fn text(&self) -> String {
        // `["a", "b"]`, the way the tests' hand-written tables spell lists (some tests edit the
        // text by replacing such a list).
        let list = |items: &[String]| {
            let quoted: Vec<String> = items
                .iter()
                .map(|i| serde_json::to_string(i).expect("strings serialise"))
                .collect();
            format!("[{}]", quoted.join(", "))
        };
        let mut t = String::new();
        let _ = write!(
            t,
            "\n[[integrations]]\nname = \"{}\"\ncard = \"{}\"\norigins = {}\nskills = {}\n\
             data_classes = {}\n{}",
            self.name,
            self.card,
            list(&self.origins),
            list(&self.skills),
            list(&self.data_classes),
            self.extra
        );
        t
    }
}
