#!/usr/bin/env node
// The CLI is bundled (npm run build → dist/app/cli.js; see src/cli/main.ts and scripts/bundle.mjs).
import {run} from '../dist/app/cli.js'

await run(import.meta.url)
