/**
 * A store seen without its catalog (docs/FORMAT.md "The catalog"): every call forwarded but
 * `readCatalog` / `rebuildCatalog`, so `Sessions.list` reads every `meta.json`, as a backend
 * without a catalog does and as every backend did before it. Used by the listing tests and
 * as the baseline of the listing benchmark. Not a test file itself.
 */
import type { StoragePort } from "../../core/mod.ts";

/** `inner` without its catalog. */
export function withoutCatalog(inner: StoragePort): StoragePort {
  return {
    read: (p) => inner.read(p),
    readTail: (p, n) => inner.readTail(p, n),
    list: (d) => inner.list(d),
    replace: (p, b, o) => inner.replace(p, b, o),
    append: (p, b) => inner.append(p, b),
    createExclusive: (p, b, o) => inner.createExclusive(p, b, o),
    truncate: (p, n) => inner.truncate(p, n),
    remove: (p, o) => inner.remove(p, o),
    move: (f, t) => inner.move(f, t),
    ...(inner.readMany ? { readMany: (r) => inner.readMany!(r) } : {}),
  };
}
