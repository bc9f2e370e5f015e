//! What a model call costs: token usage times a price per million tokens.
//!
//! The shipped table covers the common models of the Agent panel's presets
//! (list prices in US dollars per million tokens, as published by each
//! provider on 2026-11-01); an Agent Node's provider config can override it
//! (`price`), which is what a table cannot know: negotiated prices, new
//! models, a local server's real cost. Models not in the table and without
//! an override cost 0, and the run's records say the price was unknown.
//!
//! `max_budget` is in the same unit as this cost (US dollars for the real
//! providers, the script's own `cost` for the scripted model).

use serde::{Deserialize, Serialize};

use crate::chat::TokenUsage;

/// US dollars per million input and output tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Price {
    pub const fn new(input_per_million: f64, output_per_million: f64) -> Self {
        Self {
            input_per_million,
            output_per_million,
        }
    }

    /// The cost of one call's usage.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_million
            + usage.output_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// Shipped prices, by model name prefix: the longest matching prefix wins,
/// so a dated snapshot (`gpt-4o-2024-08-06`) takes its family's price and
/// `gpt-4o-mini` is not priced as `gpt-4o`.
const TABLE: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-5", Price::new(1.25, 10.0)),
    ("gpt-5-mini", Price::new(0.25, 2.0)),
    ("gpt-5-nano", Price::new(0.05, 0.40)),
    ("gpt-4.1", Price::new(2.0, 8.0)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40)),
    ("gpt-4o", Price::new(2.50, 10.0)),
    ("gpt-4o-mini", Price::new(0.15, 0.60)),
    ("o3", Price::new(2.0, 8.0)),
    ("o3-mini", Price::new(1.10, 4.40)),
    ("o4-mini", Price::new(1.10, 4.40)),
    // Anthropic
    ("claude-opus-4", Price::new(15.0, 75.0)),
    ("claude-sonnet-4", Price::new(3.0, 15.0)),
    ("claude-haiku-4", Price::new(1.0, 5.0)),
    ("claude-3-7-sonnet", Price::new(3.0, 15.0)),
    ("claude-3-5-sonnet", Price::new(3.0, 15.0)),
    ("claude-3-5-haiku", Price::new(0.80, 4.0)),
    // Groq
    ("llama-3.1-8b-instant", Price::new(0.05, 0.08)),
    ("llama-3.3-70b-versatile", Price::new(0.59, 0.79)),
];

/// The shipped price of a model, if the table knows it. OpenRouter's
/// `vendor/model` names are looked up by their model part.
pub fn shipped_price(model: &str) -> Option<Price> {
    let name = model.rsplit('/').next().unwrap_or(model);
    TABLE
        .iter()
        .filter(|(prefix, _)| {
            name == *prefix
                || name
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('-') || rest.starts_with(':'))
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
}

/// The price a call is charged at: the node's override, else the table.
pub fn price_for(model: &str, overridden: Option<Price>) -> Option<Price> {
    overridden.or_else(|| shipped_price(model))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(model: &str, expected: Option<(f64, f64)>) {
        assert_eq!(
            shipped_price(model).map(|p| (p.input_per_million, p.output_per_million)),
            expected,
            "{model}"
        );
    }

    #[test]
    fn longest_prefix_wins() {
        check("gpt-4o", Some((2.5, 10.0)));
        check("gpt-4o-2024-08-06", Some((2.5, 10.0)));
        check("gpt-4o-mini", Some((0.15, 0.6)));
        check("gpt-4o-mini-2024-07-18", Some((0.15, 0.6)));
        check("openai/gpt-4o-mini", Some((0.15, 0.6)));
        check("claude-sonnet-4-20250514", Some((3.0, 15.0)));
        check("llama3", None);
        check("gpt-4omni", None);
    }

    #[test]
    fn cost_is_usage_times_price() {
        let usage = TokenUsage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
        };
        assert_eq!(Price::new(2.0, 8.0).cost(&usage), 6.0);
        let over = Price::new(1.0, 1.0);
        assert_eq!(price_for("gpt-4o", Some(over)), Some(over));
        assert_eq!(price_for("unknown", None), None);
    }
}
