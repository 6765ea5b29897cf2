/**
 * pi-coding-agent sessions: files written by pi's own SessionManager (at test time, into a
 * temporary folder) are imported; sessions exported to pi are opened with SessionManager
 * and must give the same messages, tool pairing and model context.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { afterAll, describe, expect, it } from "vitest";
import { type MessageRecord, UnsupportedSchemaError } from "../../core/mod.ts";
import { FormatError, readPi, writePi } from "../../core/formats/mod.ts";
import { memorySessions, utf8 } from "./support.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sessionfold-pi-"));
  dirs.push(dir);
  return dir;
}

const USAGE = {
  input: 120,
  output: 30,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 150,
  cost: { input: 0.001, output: 0.002, cacheRead: 0, cacheWrite: 0, total: 0.003 },
};
const IDENTITY = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" } as const;
const assistant = (content: unknown[], stopReason = "stop", extra: Record<string, unknown> = {}) =>
  ({ role: "assistant", content, ...IDENTITY, usage: USAGE, stopReason, timestamp: 1_767_000_000_000, ...extra }) as never;
const user = (content: unknown) => ({ role: "user", content, timestamp: 1_767_000_000_000 }) as never;
const result = (toolCallId: string, text: string, isError = false) =>
  ({ role: "toolResult", toolCallId, toolName: "read", content: [{ type: "text", text }], isError, timestamp: 1_767_000_000_000 }) as never;

/** A pi session with every kind of entry the importer reads, written by pi itself. */
function piSession(): { file: string; manager: SessionManager } {
  const manager = SessionManager.create("/work/project", tempDir());
  manager.appendSessionInfo("Fix the parser");
  manager.appendModelChange("anthropic", "claude-sonnet-4-5");
  manager.appendThinkingLevelChange("high");
  manager.appendMessage(user("Why does parse() fail?"));
  manager.appendMessage(
    assistant([{ type: "thinking", thinking: "Read the tokenizer.", thinkingSignature: "sig-1" }, { type: "text", text: "Reading it." }, {
      type: "toolCall",
      id: "t1",
      name: "read",
      arguments: { path: "src/parse.ts" },
    }], "toolUse"),
  );
  manager.appendMessage(result("t1", "export function parse() {}"));
  const branchPoint = manager.appendMessage(assistant([{ type: "text", text: "Found it." }]));
  // An abandoned branch: not on the active path.
  manager.appendMessage(user("Try another way"));
  manager.appendMessage(assistant([{ type: "text", text: "Other way." }]));
  manager.branchWithSummary(branchPoint, "Tried another way; it did not help.");
  const kept = manager.appendMessage(user([{ type: "text", text: "Here is a screenshot" }, { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }]));
  manager.appendMessage(assistant([{ type: "toolCall", id: "t2", name: "read", arguments: { path: "b.ts" } }], "toolUse"));
  manager.appendMessage(result("t2", "no such file", true));
  manager.appendCompaction("The user fixed parse(); b.ts is missing.", kept, 4000);
  manager.appendMessage(user("Continue"));
  manager.appendMessage(assistant([{ type: "text", text: "Partial" }], "aborted"));
  manager.appendMessage(
    { role: "bashExecution", command: "ls", output: "a.ts", exitCode: 0, cancelled: false, truncated: false, timestamp: 1_767_000_000_000 } as never,
  );
  manager.appendCustomMessageEntry("note", "An extension's note", true, { k: 1 });
  manager.appendMessage(assistant([{ type: "text", text: "Done." }]));
  return { file: manager.getSessionFile()!, manager };
}

/** The model context pi builds, reduced to role and text for comparison. */
function contextShape(manager: SessionManager): unknown[] {
  return manager.buildSessionContext().messages.map((m) => {
    const message = m as { role: string; content?: unknown; summary?: string; toolCallId?: string };
    return {
      role: message.role,
      ...(message.content !== undefined ? { content: message.content } : {}),
      ...(message.summary !== undefined ? { summary: message.summary } : {}),
      ...(message.toolCallId !== undefined ? { toolCallId: message.toolCallId } : {}),
    };
  });
}

function toolPairs(messages: readonly MessageRecord[]): string[] {
  return messages.flatMap((m) =>
    m.parts.filter((p) => p.type === "tool").map((p) => `${(p as { tool_call_id: string }).tool_call_id}:${(p as { state: string }).state}`)
  );
}

describe("readPi on files pi's SessionManager wrote", () => {
  it("imports the active branch: messages, tool results, thinking, images, branch summary, compaction", async () => {
    const { file } = piSession();
    const bytes = new Uint8Array(readFileSync(file));
    const copy = bytes.slice();
    const { session, diagnostics, offBranchEntries } = await readPi(bytes, "s.jsonl");
    expect(bytes).toEqual(copy);
    expect(diagnostics).toEqual([]);
    expect(offBranchEntries).toBe(2);
    expect(session.title).toBe("Fix the parser");
    expect(session.cwd).toBe("/work/project");
    expect(session.format).toBe("pi-v3");
    const shape = session.messages.map((m) => `${m.role}:${m.parts.map((p) => p.type).join(",")}`);
    expect(shape).toEqual([
      "user:text",
      "assistant:reasoning,text,tool",
      "assistant:text",
      "user:text", // branch summary
      "user:text,file",
      "assistant:tool",
      "user:text",
      "assistant:text",
      "user:text", // bash execution
      "user:text", // custom message
      "assistant:text",
    ]);
    expect(toolPairs(session.messages)).toEqual(["t1:output-available", "t2:output-error"]);
    expect(session.messages[1]!.parts[0]).toMatchObject({ type: "reasoning", text: "Read the tokenizer.", pi: { thinkingSignature: "sig-1" } });
    expect(session.messages[1]!.usage).toEqual({ input_tokens: 120, output_tokens: 30, total_tokens: 150, cost_usd_micros: 3000 });
    expect(session.messages[7]!.status).toBe("stopped");
    expect(session.segments).toEqual([{ through: 4, summary: "The user fixed parse(); b.ts is missing.", createdAt: expect.any(String) }]);
    expect(session.messages[8]!.parts[0]).toMatchObject({ text: "Ran `ls`\n```\na.ts\n```" });
  });

  it("installs a compaction as a closed segment, so the model context is pi's", async () => {
    const { file } = piSession();
    const { session } = await readPi(new Uint8Array(readFileSync(file)), "s.jsonl");
    const sessions = memorySessions();
    const imported = await sessions.importPortable("a1/w1/pi", session);
    expect(imported.summary?.text).toBe("The user fixed parse(); b.ts is missing.");
    expect(imported.active.length).toBe(session.messages.length - 4);
    const back = await imported.exportPortable();
    expect(back.messages.length).toBe(session.messages.length);
    expect(back.segments).toEqual([{ through: 4, summary: "The user fixed parse(); b.ts is missing.", createdAt: expect.any(String) }]);
  });

  it("tolerates a torn final line and refuses mid-file corruption with file and line", async () => {
    const { file } = piSession();
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    const torn = `${lines.join("\n")}\n${lines[4]!.slice(0, 20)}`;
    const { session, diagnostics } = await readPi(utf8(torn), "s.jsonl");
    expect(diagnostics.map((d) => [d.code, d.line])).toEqual([["truncated_tail", lines.length + 1]]);
    expect(session.messages.length).toBe(11);
    const broken = [...lines];
    broken[5] = "{not json";
    await expect(readPi(utf8(`${broken.join("\n")}\n`), "s.jsonl")).rejects.toMatchObject({ constructor: FormatError, file: "s.jsonl", line: 6 });
    const wrongParent = [...lines];
    wrongParent[5] = JSON.stringify({ ...JSON.parse(lines[5]!), parentId: "nope" });
    await expect(readPi(utf8(`${wrongParent.join("\n")}\n`), "s.jsonl")).rejects.toThrow(
      /^s\.jsonl:6: \$\.parentId: found "nope"; expected the id of an earlier entry/,
    );
    const future = [JSON.stringify({ ...JSON.parse(lines[0]!), version: 4 }), ...lines.slice(1)];
    await expect(readPi(utf8(future.join("\n")), "s.jsonl")).rejects.toBeInstanceOf(UnsupportedSchemaError);
  });

  it("refuses a tool result without its call on the branch, and creates nothing", async () => {
    const manager = SessionManager.create("/p", tempDir());
    manager.appendMessage(user("hi"));
    manager.appendMessage(assistant([{ type: "text", text: "hello" }]));
    manager.appendMessage(result("ghost", "x"));
    const bytes = new Uint8Array(readFileSync(manager.getSessionFile()!));
    await expect(readPi(bytes, "g.jsonl")).rejects.toThrow(/^g\.jsonl:4: \$\.message\.toolCallId: found "ghost"/);
  });

  it("reads version 1 (no ids: one linear chain) and version 2 (hookMessage) files", async () => {
    const v1 = [
      { type: "session", id: "old", timestamp: "2025-06-01T00:00:00.000Z", cwd: "/p" },
      { type: "message", timestamp: "2025-06-01T00:00:01.000Z", message: { role: "user", content: "hi", timestamp: 0 } },
      { type: "message", timestamp: "2025-06-01T00:00:02.000Z", message: assistant([{ type: "text", text: "hello" }]) },
    ];
    const one = await readPi(utf8(v1.map((l) => JSON.stringify(l)).join("\n")), "v1.jsonl");
    expect(one.session.format).toBe("pi-v1");
    expect(one.session.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const v2 = [
      { type: "session", version: 2, id: "mid", timestamp: "2025-08-01T00:00:00.000Z", cwd: "/p" },
      {
        type: "message",
        id: "a",
        parentId: null,
        timestamp: "2025-08-01T00:00:01.000Z",
        message: { role: "hookMessage", customType: "h", content: "from a hook", display: true, timestamp: 0 },
      },
    ];
    const two = await readPi(utf8(v2.map((l) => JSON.stringify(l)).join("\n")), "v2.jsonl");
    expect(two.session.messages[0]).toMatchObject({
      role: "user",
      parts: [{ type: "text", text: "from a hook" }],
      pi: { entry: "custom", message: { role: "custom" } },
    });
    const v3 = [{ ...v2[0], version: 3 }, v2[1]];
    await expect(readPi(utf8(v3.map((l) => JSON.stringify(l)).join("\n") + "\n"), "v3.jsonl")).rejects.toThrow(
      /^v3\.jsonl:2: \$\.message\.role: found "hookMessage"/,
    );
  });

  it("streams: the same result from chunks of any size", async () => {
    const { file } = piSession();
    const bytes = new Uint8Array(readFileSync(file));
    const whole = await readPi(bytes, "s.jsonl");
    async function* chunks(size: number) {
      for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
    }
    for (const size of [1, 7, 4096]) expect(await readPi(chunks(size), "s.jsonl")).toEqual(whole);
  });
});

describe("writePi, checked by pi's SessionManager", () => {
  it("an exported session opens in pi with the same messages, tool pairing and context", async () => {
    const { file, manager } = piSession();
    const { session: portable } = await readPi(new Uint8Array(readFileSync(file)), "s.jsonl");
    const sessions = memorySessions();
    const imported = await sessions.importPortable("a1/w1/pi", portable);
    const bytes = writePi(await imported.exportPortable());
    const out = join(tempDir(), "exported.jsonl");
    writeFileSync(out, bytes);
    const reopened = SessionManager.open(out);
    expect(contextShape(reopened)).toEqual(contextShape(manager));
    expect(reopened.buildSessionContext().model).toEqual(manager.buildSessionContext().model);
    expect(reopened.getSessionName()).toBe("Fix the parser");
    expect(reopened.getHeader()?.cwd).toBe("/work/project");
  });

  it("writes a sessionfold-made session pi can open; reports what pi has no place for", async () => {
    const sessions = memorySessions();
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "native", title: "Native" });
    const provider = { provider: "openai", api: "openai-responses", model: "gpt-5" };
    await session.append([
      { role: "user", parts: [{ type: "text", text: "List files" }] },
      {
        role: "assistant",
        provider,
        parts: [
          { type: "reasoning-summary", text: "Use ls." },
          { type: "provider-context", ...provider, data: { encrypted_content: "x" } },
          { type: "tool", tool_call_id: "c1", tool_name: "ls", state: "output-available", input: {}, output: { files: ["a"] } },
          { type: "tool", tool_call_id: "c2", tool_name: "cat", state: "input-available", input: { f: "a" } },
        ],
      },
      { role: "assistant", parts: [{ type: "text", text: "a" }] },
    ]);
    const omitted: string[] = [];
    const bytes = writePi(await session.exportPortable(), { cwd: "/x", onOmitted: (o) => omitted.push(`${o.message}:${o.type}`) });
    expect(omitted).toEqual(["1:provider-context"]);
    const out = join(tempDir(), "native.jsonl");
    writeFileSync(out, bytes);
    const context = SessionManager.open(out).buildSessionContext().messages as { role: string; content: unknown }[];
    expect(context.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(context[2]!.content).toEqual([{ type: "text", text: '{"files":["a"]}' }]);
    const back = await readPi(bytes, "native.jsonl");
    expect(toolPairs(back.session.messages)).toEqual(["c1:output-available", "c2:input-available"]);
  });
});
