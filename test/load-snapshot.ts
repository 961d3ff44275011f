// The reference for the bulk path: a source's snapshot with every route built, nothing separated or dropped.
import type {Snapshot} from '../src/model/types.js'
import {loadSourceFiles, snapshotFrom, type SourceOptions} from '../src/services/load.js'

/** The plain snapshot of a source: what the bulk path is compared with. */
export async function loadSnapshot(opts: SourceOptions): Promise<Snapshot> {
  return snapshotFrom(await loadSourceFiles(opts), opts)
}
