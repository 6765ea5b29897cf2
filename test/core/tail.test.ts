import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeJsonl, encodeJsonl, type FileTail, type JsonlDecodeOptions, MemoryStorage, readLastRecord, type StoragePort } from "../../core/mod.ts";
import { ACTIVE, byteLength, concatBytes, jsonLine, lineEnds, message, messages, SCHEMAS, summary, utf8 } from "./support.ts";

const PATH = "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl";
const options: JsonlDecodeOptions = { file: ACTIVE, schemas: SCHEMAS };

/** A MemoryStorage that counts the bytes handed out by readTail. */
class CountingStorage extends MemoryStorage {
  tailCalls = 0;
  tailBytes = 0;
  override async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    const tail = await super.readTail(path, maxBytes);
    if (tail) {
      this.tailCalls += 1;
      this.tailBytes += tail.bytes.length;
    }
    return tail;
  }
}

async function storageWith(content: string | Uint8Array): Promise<CountingStorage> {
  const storage = new CountingStorage();
  await storage.replace(PATH, typeof content === "string" ? utf8(content) : content);
  return storage;
}

const big = (n: number, seed = "x") => seed.repeat(n);

describe("readLastRecord", () => {
  it("returns the last record of a small file, reading it whole", async () => {
    const text = jsonLine(message(1)) + jsonLine(message(2)) + jsonLine(message(3));
    const storage = await storageWith(text);
    const last = await readLastRecord(storage, PATH, options);
    expect(last).toEqual({ record: message(3), diagnostics: [], size: byteLength(text), bytesRead: byteLength(text) });
    expect(storage.tailCalls).toBe(1);
  });

  it("returns undefined for a missing file", async () => {
    expect(await readLastRecord(new MemoryStorage(), PATH, options)).toBeUndefined();
  });

  it("an empty file has no record and no diagnostic", async () => {
    const last = await readLastRecord(await storageWith(""), PATH, options);
    expect(last).toEqual({ record: undefined, diagnostics: [], size: 0, bytesRead: 0 });
  });

  it("handles a file with a single line, with and without its newline", async () => {
    for (const text of [jsonLine(summary(9)), JSON.stringify(summary(9))]) {
      const last = await readLastRecord(await storageWith(text), PATH, options);
      expect(last?.record).toEqual(summary(9));
      expect(last?.diagnostics).toEqual([]);
      expect(last?.size).toBe(byteLength(text));
    }
  });

  it("keeps a valid final line without newline", async () => {
    const text = jsonLine(message(1)) + JSON.stringify(message(2));
    const last = await readLastRecord(await storageWith(text), PATH, options);
    expect(last?.record).toEqual(message(2));
    expect(last?.diagnostics).toEqual([]);
  });

  it("a torn final line: no record, a non-fatal truncated_tail with line null", async () => {
    const text = jsonLine(message(1)) + jsonLine(message(2)) + '{"record_type":"message","seq';
    const last = await readLastRecord(await storageWith(text), PATH, options);
    expect(last?.record).toBeUndefined();
    expect(last?.diagnostics).toHaveLength(1);
    expect(last?.diagnostics[0]).toMatchObject({ file: ACTIVE, line: null, code: "truncated_tail", fatal: false });
    expect(last!.diagnostics[0]!.message).toContain(`${ACTIVE} (last line)`);
    expect(last!.diagnostics[0]!.message).not.toContain(`${ACTIVE}:1`);
  });

  it("a torn final line is fatal with tornTailRecoverable: false (segments)", async () => {
    const text = jsonLine(message(1)) + '{"record_type":"summ';
    const last = await readLastRecord(await storageWith(text), PATH, { ...options, tornTailRecoverable: false });
    expect(last?.record).toBeUndefined();
    expect(last?.diagnostics[0]).toMatchObject({ line: null, code: "invalid_json", fatal: true });
  });

  it("an invalid complete final line: invalid_record, fatal, line null", async () => {
    const text = jsonLine(message(1)) + jsonLine(summary(1, { text: "" }));
    const last = await readLastRecord(await storageWith(text), PATH, options);
    expect(last?.record).toBeUndefined();
    expect(last?.diagnostics).toHaveLength(1);
    expect(last?.diagnostics[0]).toMatchObject({ file: ACTIVE, line: null, code: "invalid_record", fatal: true });
  });

  it("an unknown record type as the final line: no record, unknown_record", async () => {
    const text = jsonLine(message(1)) + jsonLine({ record_type: "future" });
    const last = await readLastRecord(await storageWith(text), PATH, options);
    expect(last?.record).toBeUndefined();
    expect(last?.diagnostics[0]).toMatchObject({ line: null, code: "unknown_record", fatal: false });
  });

  it("a file ending in an empty line reports that line, not the one before", async () => {
    const last = await readLastRecord(await storageWith(jsonLine(message(1)) + "\n"), PATH, options);
    expect(last?.record).toBeUndefined();
    expect(last?.diagnostics[0]).toMatchObject({ line: null, code: "invalid_json", fatal: true });
  });

  it("a file that is a single newline is one empty (invalid) line", async () => {
    const last = await readLastRecord(await storageWith("\n"), PATH, options);
    expect(last?.record).toBeUndefined();
    expect(last?.diagnostics[0]).toMatchObject({ line: null, code: "invalid_json", fatal: true });
    expect(decodeJsonl(utf8("\n"), options).diagnostics[0]?.code).toBe("invalid_json");
  });

  it("finds a final line longer than the initial 4096-byte window in a 1 MB file", async () => {
    const head = jsonLine(message(1, { parts: [{ sequence: 1, type: "text", text: big(700_000) }] }));
    const lastRecord = summary(1, { text: big(300_000, "é") }); // 600 000 bytes of text
    const text = head + jsonLine(lastRecord);
    const storage = await storageWith(text);
    const last = await readLastRecord(storage, PATH, options);
    expect(last?.record).toEqual(lastRecord);
    expect(last?.diagnostics).toEqual([]);
    expect(last?.size).toBe(byteLength(text));
    expect(last!.size).toBeGreaterThan(1_000_000);
    expect(storage.tailCalls).toBeGreaterThan(1);
    expect(last?.bytesRead).toBe(storage.tailBytes); // every window counts
  });

  it("finds a long unterminated final line too", async () => {
    const lastRecord = message(2, { parts: [{ sequence: 1, type: "text", text: big(20_000) }] });
    const text = jsonLine(message(1)) + JSON.stringify(lastRecord);
    const last = await readLastRecord(await storageWith(text), PATH, options);
    expect(last?.record).toEqual(lastRecord);
  });

  it("reads a bounded number of bytes from a big file with short lines", async () => {
    const lines: string[] = [];
    let size = 0;
    for (let i = 1; size < 1_000_000; i++) {
      const line = jsonLine(message(i));
      lines.push(line);
      size += line.length;
    }
    const storage = await storageWith(lines.join(""));
    const last = await readLastRecord(storage, PATH, options);
    expect(last?.record).toEqual(message(lines.length));
    expect(last!.size).toBeGreaterThanOrEqual(1_000_000);
    expect(last!.bytesRead).toBeLessThanOrEqual(4096);
    expect(storage.tailCalls).toBe(1);
  });

  it("a window that starts exactly at the last line's first byte still works (grows once)", async () => {
    const lastLine = jsonLine(message(2));
    const text = jsonLine(message(1)) + lastLine;
    const storage = await storageWith(text);
    const last = await readLastRecord(storage, PATH, { ...options, initialBytes: byteLength(lastLine) });
    expect(last?.record).toEqual(message(2));
  });

  it("property: equals the last line of decodeJsonl for any file, truncation and window size", async () => {
    const arb = messages({ maxLength: 5 }).chain((records) => {
      const size = lineEnds(records).at(-1)!;
      return fc.tuple(fc.constant(records), fc.integer({ min: 1, max: size }), fc.integer({ min: 1, max: 400 }), fc.boolean());
    });
    await fc.assert(
      fc.asyncProperty(arb, async ([records, cut, initialBytes, recoverable]) => {
        const bytes = encodeJsonl(records).subarray(0, cut);
        const opts = { ...options, tornTailRecoverable: recoverable };
        const storage = new MemoryStorage();
        await storage.replace(PATH, bytes);
        const last = await readLastRecord(storage, PATH, { ...opts, initialBytes });
        const whole = decodeJsonl(bytes, opts);
        const lastLine = bytes.at(-1) === 0x0a ? bytes.subarray(0, -1).filter((b) => b === 0x0a).length + 1 : bytes.filter((b) => b === 0x0a).length + 1;
        const expectedRecord = whole.records.find((r) => r.line === lastLine)?.record;
        expect(last?.record).toEqual(expectedRecord);
        expect(last?.diagnostics).toEqual(
          whole.diagnostics
            .filter((d) => d.line === lastLine)
            .map((d) => ({ ...d, line: null, message: d.message.replace(`${ACTIVE}:${lastLine}: `, `${ACTIVE} (last line): `) })),
        );
        expect(last?.size).toBe(bytes.length);
      }),
      { numRuns: 200 },
    );
  });

  it("works over any StoragePort (not only MemoryStorage)", async () => {
    const content = concatBytes(utf8(jsonLine(message(1))), utf8(jsonLine(message(2))));
    const port: Pick<StoragePort, "readTail"> = {
      readTail: (_path, maxBytes) => Promise.resolve({ bytes: content.slice(Math.max(0, content.length - maxBytes)), size: content.length }),
    };
    const last = await readLastRecord(port as StoragePort, PATH, { ...options, initialBytes: 16 });
    expect(last?.record).toEqual(message(2));
  });
});
