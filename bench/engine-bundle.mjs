// The netlink apply engine (dist/netlink/apply.js and what it imports, ipaddr.js included) bundled into one
// ES module, for bench/apply-driver.mjs. The CLI never loads tsc's per-module output: `fix --apply` imports the
// engine's chunk of its bundle (scripts/bundle.mjs), whose model and ipaddr.js code is already loaded with the
// start-up chunk. Loaded module by module, the engine costs a process of its own several times the time and
// page faults it costs bundled (the ESM loader translating ipaddr.js, CommonJS, is much of it).
// The file is written inside the project (bench/out/), so that the engine finds the netlink package as it does
// from dist/. Usage: node bench/engine-bundle.mjs [OUT_FILE]
import {existsSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import {rolldown} from 'rolldown'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ENTRY = path.join(HERE, '..', 'dist', 'netlink', 'apply.js')
export const ENGINE_BUNDLE = path.join(HERE, 'out', 'apply-engine.mjs')

/** Bundle the engine built in dist/ (npm run build) into `file`; its path. */
export async function bundleEngine(file = ENGINE_BUNDLE) {
  if (!existsSync(ENTRY)) throw new Error(`${path.relative(process.cwd(), ENTRY)} is missing: run npm run build first`)
  // the netlink package stays outside: it holds the native binding, found through the package (src/netlink/client.ts)
  const bundle = await rolldown({input: ENTRY, platform: 'node', external: [/^node:/, /^netlink(\/|$)/], logLevel: 'silent'})
  try {
    await bundle.write({file, format: 'esm'})
  } finally {
    await bundle.close()
  }
  return file
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await bundleEngine(process.argv[2] ? path.resolve(process.argv[2]) : undefined))
}
