//! `[api.cors]`: which browser origins may call the HTTP API, as the
//! Agent Server's `http.cors` configures it. An unset list keeps the
//! scheduler's default (`deepfleet_api::cors`): a UI served
//! from localhost or a loopback address, on any port, is let in.

use serde::{Deserialize, Serialize};

/// Cross-origin access to the HTTP API.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorsSettings {
    /// Origins allowed in: `https://chat.example.com`, a host on any port
    /// (`http://localhost:*`), or `*`. Default: none (localhost and
    /// loopback origins, any port).
    pub allow_origins: Option<Vec<String>>,
    /// Methods allowed. Default: none (GET, POST, PUT, PATCH, DELETE).
    pub allow_methods: Option<Vec<String>>,
    /// Request headers allowed; `*` allows any a preflight asks for.
    /// Default: none (`content-type`, `x-api-key`, `authorization`,
    /// `x-auth-scheme`, `x-request-id`, `last-event-id`).
    pub allow_headers: Option<Vec<String>>,
    /// Response headers a browser client may read. Default: none
    /// (`content-location`, `location`, `x-request-id`, `retry-after`).
    pub expose_headers: Option<Vec<String>>,
    /// Whether requests may carry cookies and HTTP authentication (not
    /// with origin `*`). Default: false.
    pub allow_credentials: bool,
    /// Seconds a browser may reuse a preflight's answer. Default: 600.
    pub max_age_secs: Option<u64>,
}
