/**
 * The demo's tools, executed locally in the page: `clock`, `calculator` and `dice`.
 * Any provider may call them (the built-in model does, now and then).
 */
import type { Tool } from "../core/mod.ts";

/** What time it is, in the user's time zone or one given by the model. */
export const clockTool: Tool = {
  name: "clock",
  description: "Current date and time (optional IANA time zone).",
  inputSchema: { type: "object", properties: { timezone: { type: "string" } }, additionalProperties: false },
  execute(input) {
    const now = new Date();
    const requested = (input as { timezone?: unknown } | null)?.timezone;
    const timezone = typeof requested === "string" && requested !== "" ? requested : Intl.DateTimeFormat().resolvedOptions().timeZone;
    let local: string;
    try {
      local = now.toLocaleString("en-GB", { timeZone: timezone, dateStyle: "full", timeStyle: "long" });
    } catch {
      throw new Error(`unknown time zone ${JSON.stringify(timezone)}`);
    }
    return { iso: now.toISOString(), local, timezone };
  },
};

/** Arithmetic on numbers: + - * / % ^ and parentheses. No `eval`. */
export const calculatorTool: Tool = {
  name: "calculator",
  description: "Evaluates arithmetic: + - * / % ^ ( ).",
  inputSchema: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"], additionalProperties: false },
  execute(input) {
    const expression = (input as { expression?: unknown } | null)?.expression;
    if (typeof expression !== "string" || expression.trim() === "") throw new Error("expression must be a non-empty string");
    return { expression, result: evaluate(expression) };
  },
};

/** Rolls dice with the browser's cryptographic random numbers. */
export const diceTool: Tool = {
  name: "dice",
  description: "Rolls count dice with sides sides.",
  inputSchema: {
    type: "object",
    properties: { count: { type: "integer", minimum: 1, maximum: 20 }, sides: { type: "integer", minimum: 2, maximum: 1000 } },
    additionalProperties: false,
  },
  execute(input) {
    const { count = 1, sides = 6 } = (input ?? {}) as { count?: unknown; sides?: unknown };
    if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > 20) throw new Error("count must be an integer from 1 to 20");
    if (!Number.isInteger(sides) || (sides as number) < 2 || (sides as number) > 1000) throw new Error("sides must be an integer from 2 to 1000");
    const values = crypto.getRandomValues(new Uint32Array(count as number));
    const rolls = [...values].map((v) => (v % (sides as number)) + 1);
    return { rolls, total: rolls.reduce((a, b) => a + b, 0), sides };
  },
};

/** Every tool the demo offers. */
export const demoTools: readonly Tool[] = [clockTool, calculatorTool, diceTool];

/** Evaluates an arithmetic expression with a small recursive-descent parser. */
export function evaluate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?(?:e[+-]?\d+)?|\.\d+|[-+*/%^()×÷]|\S/gi) ?? [];
  let position = 0;
  const peek = () => tokens[position];
  const take = () => tokens[position++];

  const primary = (): number => {
    const token = take();
    if (token === undefined) throw new Error("the expression ends too early");
    if (token === "(") {
      const value = sum();
      if (take() !== ")") throw new Error("a closing parenthesis is missing");
      return value;
    }
    if (token === "-") return -power();
    if (token === "+") return power();
    const value = Number(token);
    if (!Number.isFinite(value)) throw new Error(`unexpected ${JSON.stringify(token)}`);
    return value;
  };
  const power = (): number => {
    const base = primary();
    if (peek() === "^") {
      take();
      return base ** power();
    }
    return base;
  };
  const product = (): number => {
    let value = power();
    for (let op = peek(); op === "*" || op === "/" || op === "%" || op === "×" || op === "÷"; op = peek()) {
      take();
      const right = power();
      if ((op === "/" || op === "÷" || op === "%") && right === 0) throw new Error("division by zero");
      value = op === "*" || op === "×" ? value * right : op === "%" ? value % right : value / right;
    }
    return value;
  };
  const sum = (): number => {
    let value = product();
    for (let op = peek(); op === "+" || op === "-"; op = peek()) {
      take();
      value = op === "+" ? value + product() : value - product();
    }
    return value;
  };

  const value = sum();
  if (position < tokens.length) throw new Error(`unexpected ${JSON.stringify(tokens[position])}`);
  return Math.round(value * 1e12) / 1e12;
}
