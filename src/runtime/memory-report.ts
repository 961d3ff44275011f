// A measuring hook for benches: with ROUTEDOCTOR_MEMORY_REPORT set, SIGUSR2 writes one JSON line to stderr with the
// process's memory as it is and after a full collection (what is held, against what the heap and malloc keep).
import v8 from 'node:v8'

import {collectGarbage} from './collect-garbage.js'

const usage = () => {
  const m = process.memoryUsage()
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]))
  return {...m, spaces}
}

/** Installs the hook when the environment asks for it. */
export function reportMemoryOnSignal(): void {
  if (!process.env.ROUTEDOCTOR_MEMORY_REPORT) return
  process.on('SIGUSR2', () => {
    const before = usage()
    collectGarbage()
    process.stderr.write(`${JSON.stringify({memory: {before, after: usage()}})}\n`)
  })
}
