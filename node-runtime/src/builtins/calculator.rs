//! `calculator@1.0.0`: evaluates arithmetic. Numbers, `+ - * / % ^`,
//! parentheses and unary minus; nothing else, so no code runs. A small
//! precedence-climbing parser with limits on length and nesting.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::ToolError;
use crate::tool::{Tool, ToolContext};
use crate::tool_spec::{CachePolicy, SideEffects, ToolCategory, ToolMetadata, ToolSpec};

const MAX_LEN: usize = 1000;
const MAX_DEPTH: usize = 64;

pub struct Calculator;

#[derive(Debug, Deserialize)]
pub struct CalculatorInput {
    pub expression: String,
}

#[derive(Debug, Serialize)]
pub struct CalculatorOutput {
    pub result: f64,
}

impl Tool for Calculator {
    type Input = CalculatorInput;
    type Output = CalculatorOutput;

    fn spec(&self) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Utility);
        metadata.side_effects = SideEffects::None;
        metadata.cache = CachePolicy::Forever;
        metadata.timeout_ms = 1_000;
        ToolSpec {
            name: "calculator".into(),
            version: "1.0.0".into(),
            description:
                "Evaluates an arithmetic expression: numbers, + - * / % ^ and parentheses.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "expression": {"type": "string", "minLength": 1, "maxLength": MAX_LEN,
                                   "description": "e.g. (2 + 3) * 4 ^ 2"}
                },
                "required": ["expression"],
                "additionalProperties": false
            }),
            output_schema: json!({
                "type": "object",
                "properties": {"result": {"type": "number"}},
                "required": ["result"]
            }),
            metadata,
        }
    }

    async fn execute(
        &self,
        input: CalculatorInput,
        _ctx: &ToolContext,
    ) -> Result<CalculatorOutput, ToolError> {
        let result = evaluate(&input.expression).map_err(|e| {
            ToolError::validation(format!(
                "cannot evaluate `{}`: {}",
                input.expression, e.message
            ))
            .with_details(json!({ "path": "/expression", "position": e.position }))
        })?;
        Ok(CalculatorOutput { result })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EvalError {
    pub message: String,
    pub position: usize,
}

fn err(message: impl Into<String>, position: usize) -> EvalError {
    EvalError {
        message: message.into(),
        position,
    }
}

/// Evaluates an arithmetic expression.
pub fn evaluate(expr: &str) -> Result<f64, EvalError> {
    if expr.len() > MAX_LEN {
        return Err(err(
            format!("expression longer than {MAX_LEN} characters"),
            MAX_LEN,
        ));
    }
    let mut p = Parser {
        chars: expr.char_indices().collect(),
        pos: 0,
        depth: 0,
    };
    let value = p.expr(0)?;
    p.skip_ws();
    if let Some(&(at, c)) = p.chars.get(p.pos) {
        return Err(err(format!("unexpected `{c}`"), at));
    }
    if !value.is_finite() {
        return Err(err(
            "result is not a finite number (division by zero or overflow)",
            0,
        ));
    }
    Ok(value)
}

struct Parser {
    chars: Vec<(usize, char)>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn skip_ws(&mut self) {
        while self
            .chars
            .get(self.pos)
            .is_some_and(|(_, c)| c.is_whitespace())
        {
            self.pos += 1;
        }
    }

    fn at(&self) -> usize {
        self.chars
            .get(self.pos)
            .map_or_else(|| self.chars.last().map_or(0, |(i, _)| i + 1), |(i, _)| *i)
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.chars.get(self.pos).map(|(_, c)| *c)
    }

    /// Binary operators: (precedence, right associative).
    fn binary(c: char) -> Option<(u8, bool)> {
        match c {
            '+' | '-' => Some((1, false)),
            '*' | '/' | '%' => Some((2, false)),
            '^' => Some((4, true)),
            _ => None,
        }
    }

    fn expr(&mut self, min_prec: u8) -> Result<f64, EvalError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(err(format!("nesting deeper than {MAX_DEPTH}"), self.at()));
        }
        let mut lhs = self.unary()?;
        while let Some(op) = self.peek() {
            let Some((prec, right)) = Self::binary(op) else {
                break;
            };
            if prec < min_prec {
                break;
            }
            let op_at = self.at();
            self.pos += 1;
            let rhs = self.expr(if right { prec } else { prec + 1 })?;
            lhs = match op {
                '+' => lhs + rhs,
                '-' => lhs - rhs,
                '*' => lhs * rhs,
                '/' if rhs == 0.0 => return Err(err("division by zero", op_at)),
                '/' => lhs / rhs,
                '%' if rhs == 0.0 => return Err(err("modulo by zero", op_at)),
                '%' => lhs % rhs,
                _ => lhs.powf(rhs),
            };
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<f64, EvalError> {
        match self.peek() {
            Some('-') => {
                self.pos += 1;
                // Unary minus binds looser than ^: -2^2 = -4.
                Ok(-self.expr(3)?)
            }
            Some('+') => {
                self.pos += 1;
                self.expr(3)
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<f64, EvalError> {
        let at = self.at();
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                let v = self.expr(0)?;
                if self.peek() != Some(')') {
                    return Err(err("missing `)`", self.at()));
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let start = self.pos;
                while self
                    .chars
                    .get(self.pos)
                    .is_some_and(|(_, c)| c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == 'E')
                {
                    // Allow a sign right after an exponent marker.
                    let is_exp = matches!(self.chars[self.pos].1, 'e' | 'E');
                    self.pos += 1;
                    if is_exp
                        && self
                            .chars
                            .get(self.pos)
                            .is_some_and(|(_, c)| *c == '-' || *c == '+')
                    {
                        self.pos += 1;
                    }
                }
                let text: String = self.chars[start..self.pos].iter().map(|(_, c)| c).collect();
                text.parse::<f64>()
                    .map_err(|_| err(format!("`{text}` is not a number"), at))
            }
            Some(c) => Err(err(
                format!("unexpected `{c}`; only numbers, + - * / % ^ and parentheses"),
                at,
            )),
            None => Err(err("unexpected end of expression", at)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expr: &str, expected: Result<f64, &str>) {
        match (evaluate(expr), expected) {
            (Ok(v), Ok(e)) => assert!((v - e).abs() < 1e-9, "{expr}: {v} != {e}"),
            (Err(got), Err(want)) => {
                assert!(got.message.contains(want), "{expr}: {got:?} lacks {want}")
            }
            (got, want) => panic!("{expr}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn arithmetic() {
        check("1 + 2 * 3", Ok(7.0));
        check("(1 + 2) * 3", Ok(9.0));
        check("2 ^ 3 ^ 2", Ok(512.0));
        check("-2 ^ 2", Ok(-4.0));
        check("10 % 4", Ok(2.0));
        check("1.5e2 / 3", Ok(50.0));
        check("2e-1 * 10", Ok(2.0));
        check("--3", Ok(3.0));
    }

    #[test]
    fn bad_input() {
        check("", Err("unexpected end"));
        check("1 +", Err("unexpected end"));
        check("1 / 0", Err("division by zero"));
        check("(1 + 2", Err("missing `)`"));
        check("2 3", Err("unexpected `3`"));
        check("sqrt(4)", Err("unexpected `s`"));
        check("__import__('os')", Err("unexpected `_`"));
        check("1..2", Err("not a number"));
        check("10 ^ 400", Err("not a finite number"));
        check(&"(".repeat(100), Err("nesting deeper"));
        check(&"1+".repeat(600), Err("longer than"));
    }
}
