//! A figure and where it comes from: what a profile's thresholds and a soak's limits are made
//! of. Its own module, below both the profile and the soak check (a profile holds a soak check),
//! so neither imports the other for it.

use serde::{Deserialize, Serialize};

/// A threshold and where its figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcedValue {
    pub value: String,
    /// A public document, script or measurement the figure is taken from, or why it has none.
    pub source: String,
}
