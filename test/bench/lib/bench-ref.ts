/**
 * The session every synthetic history is (its ref, and its LangGraph thread) and the provider
 * identity of its assistant messages: apart from `synth.ts`, so that the probes of the packed
 * package and of the peers (`probe-package.ts`, `probe-peers.ts`) load no module of the sources.
 *
 * @module
 */
import type { SessionRef } from "../../../core/mod.ts";

/** The ref of every synthetic session. */
export const BENCH_REF: SessionRef = { agentId: "bench", workspaceId: "w1", sessionId: "s1" };
/** Provider identity of the synthetic assistant messages. */
export const BENCH_PROVIDER = { provider: "openai", api: "responses", model: "gpt-5" } as const;
/** Where case 1 in chromium keeps the compacted history of a size, beside {@linkcode BENCH_REF}'s in the same database. */
export const COMPACTED_REF: SessionRef = { ...BENCH_REF, sessionId: "s1-compacted" };
/** The thread every LangGraph benchmark checkpoint belongs to. */
export const LANGGRAPH_THREAD = "s1";
