// The interactive UI's entry (ui/run.tsx), imported dynamically: Ink and React load only for `ui`, never at
// start-up (scripts/bundle.mjs checks it).
//
// Ink (through is-in-ci, read once when Ink loads) draws nothing but the last frame at exit when
// CI or CONTINUOUS_INTEGRATION is set; both are often exported in runner shells and dev containers.
// Both ends are terminals here, so the user wants the interactive screen: hide them while Ink loads.
// DEV=true makes Ink, as it loads, connect to React's devtools (not installed) and read its own
// package.json, which is not beside the bundle that holds Ink (scripts/bundle.mjs): hidden too.
import type {runUi} from './run.js'

export async function importInteractiveUi(): Promise<typeof runUi> {
  const saved = {CI: process.env.CI, CONTINUOUS_INTEGRATION: process.env.CONTINUOUS_INTEGRATION, DEV: process.env.DEV}
  process.env.CI = 'false'
  process.env.CONTINUOUS_INTEGRATION = 'false'
  process.env.DEV = 'false'
  try {
    return (await import('./run.js')).runUi
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}
