import { InvalidInputError } from "../../errors.ts";
import type { Value } from "../shape.ts";
import { flexibleTimestamp } from "../timestamps.ts";
import { applyRhoDelta, applyRhoMessage, applyRhoReplacement, applyRhoSnapshot, cloneRhoState, initialRhoState, type RhoJsonlState } from "./jsonl-state.ts";

/** What the tree of a Rho session JSONL file held, beside the branch that was imported. */
export interface RhoTreeSummary {
  /** The node Rho would resume (the last node written or the last `set_leaf` target). */
  readonly activeLeafId: string;
  /** The node whose branch was imported: `activeLeafId` unless another was asked for. */
  readonly importedLeafId: string;
  /** Every node, virtual ones of a v1–v3 prefix included (`legacy:<byte offset>`). */
  readonly nodeCount: number;
  /** Nodes with more than one child, as Rho counts branches. */
  readonly branchCount: number;
  /** Nodes not on the imported branch (not imported; pass one of `otherLeafIds` to import its branch). */
  readonly offBranchNodes: number;
  /** The leaves of the other branches, in file order. */
  readonly otherLeafIds: readonly string[];
}

interface TreeNode {
  readonly id: string;
  readonly parentId: string | undefined;
  readonly state: RhoJsonlState;
}

/** Rho's `NodeId`: non-empty, no outer whitespace, at most 128 bytes. */
function nodeId(value: Value): string {
  const id = value.string({ nonEmpty: true });
  if (id.trim() !== id) value.fail("a node id without outer whitespace");
  if (new TextEncoder().encode(id).length > 128) value.fail("a node id of at most 128 bytes");
  return id;
}

const LEGACY_TYPES = ["message", "replace_history", "snapshot", "snapshot_delta"] as const;

/**
 * The records of a Rho session JSONL file after its header, as Rho's `SessionTree` reads
 * them: a version 1–3 prefix of legacy records (each one that changes the state is a
 * virtual node `legacy:<byte offset as 16 hex digits>` on one chain), then, in version 4 or
 * after the single `upgrade` record of a resumed file, explicit `node` records (each one's
 * state is its parent's plus its `transition`: a full `snapshot` or a `snapshot_delta`) and
 * `set_leaf` records. Every check Rho makes is made, and refuses with the record's line.
 *
 * @example
 * ```ts
 * declare const record: Parameters<RhoSessionTree["apply"]>[0];
 * const tree = new RhoSessionTree({ version: 4, id: "s", createdAt: "2026-12-02T13:00:00.000Z" });
 * tree.apply(record, 0);
 * const { state, summary } = tree.branch();
 * ```
 */
export class RhoSessionTree {
  readonly #nodes = new Map<string, TreeNode>();
  readonly #order: string[] = [];
  readonly #children = new Map<string, number>();
  readonly #version: number;
  readonly #sessionId: string;
  /** Legacy records fold into this state; each change becomes a virtual node. */
  #legacy: RhoJsonlState;
  #upgraded = false;
  #activeLeaf: string | undefined;

  constructor(header: { readonly version: number; readonly id: string; readonly createdAt: string }) {
    this.#version = header.version;
    this.#sessionId = header.id;
    this.#legacy = initialRhoState(header);
  }

  /** The state Rho reads the file as: version 4, or a resumed (upgraded) older one. */
  get effectiveVersion(): number {
    return this.#upgraded ? 4 : this.#version;
  }

  get #explicit(): boolean {
    return this.#version === 4 || this.#upgraded;
  }

  /**
   * Applies one record; `offset` is the byte offset of its line (a legacy node's id).
   *
   * @throws {FormatError} naming the record's line and field when Rho would refuse it.
   */
  apply(record: Value, offset: number): void {
    const type = record.field("type");
    switch (type.raw) {
      case "node":
        if (!this.#explicit) {
          type.fail(
            "a legacy record or an upgrade record first (a node record appears only in version 4 or after the upgrade record)",
            "a node record before the upgrade record",
          );
        }
        return this.#applyNode(record);
      case "set_leaf": {
        if (!this.#explicit) {
          type.fail(
            "a legacy record or an upgrade record first (set_leaf appears only in version 4 or after the upgrade record)",
            "a set_leaf record before the upgrade record",
          );
        }
        flexibleTimestamp(record.field("timestamp"));
        const target = record.field("target_id");
        const id = nodeId(target);
        if (!this.#nodes.has(id)) target.fail("the id of a node written before it", `a target ${JSON.stringify(id)} no node has`);
        this.#activeLeaf = id;
        return;
      }
      case "upgrade": {
        if (this.#version === 4) type.fail("no upgrade record in a version 4 session", "an upgrade record");
        if (this.#upgraded) type.fail("one upgrade record only", "a second upgrade record");
        flexibleTimestamp(record.field("timestamp"));
        const leaf = record.field("active_leaf_id");
        const id = nodeId(leaf);
        if (this.#activeLeaf === undefined) leaf.fail("an upgrade of a session that has a state (a legacy record before it)", "an upgrade of an empty session");
        if (id !== this.#activeLeaf) {
          leaf.fail(
            `${JSON.stringify(this.#activeLeaf)} (the current virtual leaf, named after the byte offset of the last legacy record that changed the state)`,
          );
        }
        this.#upgraded = true;
        return;
      }
      case "session":
        return type.fail("one session header only, on the first line", "a second session header");
      default:
        if (!(LEGACY_TYPES as readonly unknown[]).includes(type.raw)) {
          type.fail('"node", "set_leaf", "upgrade", "message", "replace_history", "snapshot" or "snapshot_delta"');
        }
        if (this.#explicit) {
          type.fail(
            this.#version === 4 ? "node or set_leaf records (a version 4 session has no legacy records)" : "node or set_leaf records after the upgrade record",
            `a legacy ${String(type.raw)} record`,
          );
        }
        return this.#applyLegacy(record, offset);
    }
  }

  #applyLegacy(record: Value, offset: number): void {
    const before = this.#legacy;
    const next = cloneRhoState(before);
    switch (record.field("type").raw) {
      case "message":
        applyRhoMessage(next, record);
        break;
      case "replace_history":
        applyRhoReplacement(next, record);
        break;
      case "snapshot":
        applyRhoSnapshot(next, record);
        break;
      default:
        applyRhoDelta(next, record);
    }
    this.#legacy = next;
    // Rho makes a virtual node only for a record that changed the state (tree.rs `changed`).
    const changed = (record.field("type").raw === "snapshot" && !before.snapshotSeen) ||
      next.revision !== before.revision ||
      next.keys.length !== before.keys.length ||
      next.keys.some((key, i) => key !== before.keys[i]) ||
      JSON.stringify(next.compaction ?? null) !== JSON.stringify(before.compaction ?? null);
    if (changed) this.#insert(`legacy:${offset.toString(16).padStart(16, "0")}`, this.#activeLeaf, next);
  }

  #applyNode(record: Value): void {
    const idValue = record.field("id");
    const id = nodeId(idValue);
    if (this.#nodes.has(id)) idValue.fail("a node id not used before", `the duplicate id ${JSON.stringify(id)}`);
    const parentValue = record.field("parent_id").optional();
    const parentId = parentValue ? nodeId(parentValue) : undefined;
    flexibleTimestamp(record.field("timestamp"));
    const kindValue = record.field("kind");
    if (kindValue.raw !== "commit" && kindValue.raw !== "compaction") kindValue.fail('"commit" or "compaction"');
    const kind = kindValue.raw;
    const facts = record.field("compaction_facts").optional();
    if (facts) {
      if (kind === "commit") facts.fail("no compaction_facts on a commit node", "compaction_facts on a commit node");
      facts.object("compaction facts {previous_messages, current_messages, previous_tokens, current_tokens, cost_usd_micros}");
      for (const key of ["previous_messages", "current_messages", "previous_tokens", "current_tokens"]) facts.field(key).count();
      facts.field("cost_usd_micros").optional()?.count();
    }
    const transition = record.field("transition").object("a state transition {type: snapshot | snapshot_delta, …}");
    const transitionType = transition.field("type");
    if (transitionType.raw !== "snapshot" && transitionType.raw !== "snapshot_delta") transitionType.fail('"snapshot" or "snapshot_delta"');
    let parent: TreeNode | undefined;
    if (parentValue === undefined) {
      if (this.#nodes.size > 0) record.field("parent_id").fail("the id of this node's parent (only the first node is a root)", "a second root (no parent_id)");
      if (transitionType.raw !== "snapshot") transitionType.fail('"snapshot" (a root node stores a full snapshot)');
      if (kind === "compaction") kindValue.fail('"commit" (a root node cannot be a compaction)');
    } else {
      parent = this.#nodes.get(parentId!);
      if (parent === undefined) parentValue.fail("the id of a node written before it", `a parent ${JSON.stringify(parentId)} no node has`);
      if (kind === "compaction" && transitionType.raw !== "snapshot") transitionType.fail('"snapshot" (a compaction node stores a full snapshot)');
    }
    const state = parent ? cloneRhoState(parent.state) : initialRhoState({ id: this.#sessionId, createdAt: this.#legacy.updatedAt });
    if (transitionType.raw === "snapshot") {
      const snapshot = transition.field("snapshot");
      applyRhoSnapshot(state, record, snapshot);
      if (state.sessionId !== this.#sessionId) snapshot.field("session_id").fail(`${JSON.stringify(this.#sessionId)} (the session header's id)`);
    } else {
      applyRhoDelta(state, record, transition.field("delta"));
    }
    if (parent) {
      const changed = state.revision !== parent.state.revision || state.keys.length !== parent.state.keys.length ||
        state.keys.some((k, i) => k !== parent.state.keys[i]);
      if (changed && state.revision <= parent.state.revision) transition.fail(`a revision above the parent's ${parent.state.revision} (the state changed)`);
      const compactionChanged = JSON.stringify(state.compaction ?? null) !== JSON.stringify(parent.state.compaction ?? null);
      if (compactionChanged !== (kind === "compaction")) {
        kindValue.fail(compactionChanged ? '"compaction" (the compaction state changed)' : '"commit" (the compaction state did not change)');
      }
    }
    this.#insert(id, parentId, state);
  }

  #insert(id: string, parentId: string | undefined, state: RhoJsonlState): void {
    this.#nodes.set(id, { id, parentId, state });
    this.#order.push(id);
    if (parentId !== undefined) this.#children.set(parentId, (this.#children.get(parentId) ?? 0) + 1);
    this.#activeLeaf = id;
  }

  /**
   * The state at the end of a branch: the active leaf's, or `leafId`'s (any node).
   *
   * @throws {InvalidInputError} when `leafId` names no node.
   */
  branch(leafId?: string): { state: RhoJsonlState; summary?: RhoTreeSummary } {
    if (this.#activeLeaf === undefined) {
      if (leafId !== undefined) throw new InvalidInputError(`the session has no node ${JSON.stringify(leafId)}: it has no state yet`, { branch: leafId });
      return { state: this.#legacy };
    }
    const target = leafId ?? this.#activeLeaf;
    const node = this.#nodes.get(target);
    if (node === undefined) {
      throw new InvalidInputError(`the session has no node ${JSON.stringify(target)}; its leaves are ${this.#leaves().join(", ")}`, {
        branch: target,
        leaves: this.#leaves(),
      });
    }
    const onBranch = new Set<string>();
    for (let at: TreeNode | undefined = node; at; at = at.parentId === undefined ? undefined : this.#nodes.get(at.parentId)) onBranch.add(at.id);
    const summary: RhoTreeSummary = {
      activeLeafId: this.#activeLeaf,
      importedLeafId: target,
      nodeCount: this.#nodes.size,
      branchCount: [...this.#children.values()].filter((n) => n > 1).length,
      offBranchNodes: this.#nodes.size - onBranch.size,
      otherLeafIds: this.#leaves().filter((id) => id !== target && !onBranch.has(id)),
    };
    return { state: node.state, summary };
  }

  #leaves(): string[] {
    return this.#order.filter((id) => !this.#children.has(id));
  }
}
