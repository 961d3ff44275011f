#!/usr/bin/env node
// The CLI is bundled (npm run build → dist/app/cli.js; see src/main.ts and scripts/bundle.mjs).
// A large input first gets the CLI run again with huge pages for malloc (src/runtime/hugepages.ts).
import {rerunWithHugePages} from '../dist/runtime/hugepages.js'

if (!(await rerunWithHugePages())) {
  const {run} = await import('../dist/app/cli.js')
  await run(import.meta.url)
}
