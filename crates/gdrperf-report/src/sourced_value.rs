//! A figure and where it comes from: what a profile's thresholds and a soak's limits are made
//! of, both the profile's and the soak check's (a profile holds a soak check).

use serde::{Deserialize, Serialize};

/// A threshold and where its figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcedValue {
    pub value: String,
    /// A public document, script or measurement the figure is taken from, or why it has none.
    pub source: String,
}
