// A full garbage collection on request. `check` lets go of a full table's texts at once (bulk/drop-texts.ts);
// V8 frees them only at its next full collection, which on a heap growing as
// the report is written can come seconds later, with the texts and the new heap both resident meanwhile.
import v8 from 'node:v8'
import vm from 'node:vm'

let gc: (() => void) | undefined

/** Collect now (what `node --expose-gc` offers as `gc()`, enabled here when first asked for). */
export function collectGarbage(): void {
  if (gc === undefined) {
    v8.setFlagsFromString('--expose-gc')
    gc = vm.runInNewContext('gc') as () => void // a new context sees the flag; this one was made before it
  }
  gc()
}

// a full collection costs more than it frees on a small snapshot
const LET_GO_ENOUGH = 16 * 2 ** 20

/** A full collection when `chars` of the files add up to more than `enough` (what they let go of). */
export function collectAfter<F>(files: readonly F[], chars: (f: F) => number, enough = LET_GO_ENOUGH): void {
  let n = 0
  for (const f of files) n += chars(f)
  if (n > enough) collectGarbage()
}
