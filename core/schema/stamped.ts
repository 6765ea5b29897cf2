/**
 * A base class for remembering a value on an object the core made, in a private field of
 * that object: a field costs what adding a property costs, where a `WeakMap` entry costs
 * several times that and weighs on every collection (docs/decisions.md "PostgreSQL's
 * per-operation commit: `meta.json`'s document on its bytes"). Nothing else sees the field:
 * not `JSON.stringify`, `Object.keys`, equality in tests or a structured clone.
 *
 * @module
 */

/**
 * A base class whose constructor returns the object it is given, so a subclass's private
 * field lands on that object.
 *
 * @example
 * ```ts
 * class Tagged extends Stamped {
 *   readonly #tag: string;
 *   constructor(target: object, tag: string) {
 *     super(target);
 *     this.#tag = tag;
 *   }
 *   static tagOf(target: object): string | undefined {
 *     return #tag in target ? (target as Tagged).#tag : undefined;
 *   }
 * }
 * ```
 */
export class Stamped {
  constructor(target: object) {
    return target as Stamped;
  }
}
