/**
 * A sealed line is what docs/FORMAT.md "Encrypted stores" says, checked with raw WebCrypto and
 * the documented associated data, not with the envelope code itself: a line the code seals opens
 * with the documented bytes, and a line sealed by hand from the documentation opens with the code.
 */
import { describe, expect, it } from "vitest";
import { type Envelope, LINE_CLEAR_FIELDS, openEnvelope, parseEnvelope, sealBytes } from "../../core/encryption/envelope.ts";
import { fromBase64, toBase64 } from "../../core/encryption/base64.ts";

const utf8 = new TextEncoder();
const place = { session: "agent-é/ws 1/s_01", file: "messages/active.jsonl" };

/** docs/FORMAT.md: `["sessionfold-sealed", 1, "<agent>/<workspace>/<session>", "<file>", "<key>", [[name, value], …]]`, clear fields in their order. */
function documentedAssociatedData(key: string, clear: Record<string, string | number>): Uint8Array<ArrayBuffer> {
  const order = ["record_type", "sequence", "through_sequence", "message_id", "revision", "batch_size", "lines", "chain"];
  const pairs = order.filter((name) => clear[name] !== undefined).map((name) => [name, clear[name]]);
  return utf8.encode(JSON.stringify(["sessionfold-sealed", 1, place.session, place.file, key, pairs]));
}

const cases: Record<string, string | number>[] = [
  { record_type: "message", sequence: 1 },
  { record_type: "message", sequence: 512, message_id: 'm_"quoted"\\ü😀', revision: 600, batch_size: 3 },
  { record_type: "summary", through_sequence: 1e6, lines: 42, chain: "q8/+ZZ==" },
  {},
];

describe("the sealed line of docs/FORMAT.md", () => {
  it("opens with raw WebCrypto and the documented associated data", async () => {
    const dataKey = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    for (const clear of cases) {
      const plaintext = utf8.encode(JSON.stringify({ ...clear, text: "hello" }));
      const line = await sealBytes(plaintext, dataKey, "dk_1", clear, LINE_CLEAR_FIELDS, place);
      const envelope = JSON.parse(new TextDecoder().decode(line)) as { nonce: string; data: string };
      const opened = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: fromBase64(envelope.nonce)!, additionalData: documentedAssociatedData("dk_1", clear) },
        dataKey,
        fromBase64(envelope.data)!,
      );
      expect(new Uint8Array(opened)).toEqual(plaintext);
    }
  });

  it("a line sealed by hand from the documentation opens with the code, and not under another key id", async () => {
    const dataKey = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    for (const clear of cases) {
      const plaintext = utf8.encode(JSON.stringify({ ...clear, text: "by hand" }));
      const nonce = crypto.getRandomValues(new Uint8Array(12));
      const data = new Uint8Array(
        await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: documentedAssociatedData("dk_7", clear) }, dataKey, plaintext),
      );
      const line = JSON.stringify({ sealed: 1, ...clear, key: "dk_7", nonce: toBase64(nonce), data: toBase64(data) });
      const envelope = parseEnvelope(utf8.encode(line), LINE_CLEAR_FIELDS) as Envelope;
      expect(await openEnvelope(envelope, dataKey, LINE_CLEAR_FIELDS, place)).toEqual(plaintext);
      const moved = { ...envelope, key: "dk_8" };
      expect(await openEnvelope(moved, dataKey, LINE_CLEAR_FIELDS, place)).toMatchObject({ reason: expect.stringContaining("authentication failed") });
    }
  });
});
