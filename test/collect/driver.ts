// Runs collectLive in whatever network namespace it is started in (`ip netns exec NS npx tsx
// test/collect/driver.ts '{"birdSocket": ...}'`) and prints the SourceFiles as JSON on stdout.
import { collectLive, type CollectLiveOptions } from '../../src/collect/live.js'

const opts = JSON.parse(process.argv[2] ?? '{}') as CollectLiveOptions
collectLive(opts).then(
  (files) => process.stdout.write(JSON.stringify(files) + '\n'),
  (e: unknown) => {
    process.stderr.write(`driver: ${e instanceof Error ? e.stack : String(e)}\n`)
    process.exit(1)
  },
)
