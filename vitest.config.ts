import {readdirSync, readFileSync} from 'node:fs'
import {availableParallelism} from 'node:os'
import path from 'node:path'

import {defineConfig} from 'vitest/config'

const TESTS = /\.test\.tsx?$/
function testFiles(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? testFiles(p) : TESTS.test(e.name) ? [p] : []
  })
}
// the lab's tests share network namespaces and BIRD daemons: they run one file at a time, after the others, which
// run side by side
const LAB = /startLab|liveUnavailableReason|netns/
const all = testFiles('test')
const lab = all.filter((f) => f.startsWith('test/lab/') || f.startsWith('test/integration/') ||
  LAB.test(readFileSync(f, 'latin1')))
const unit = all.filter((f) => !lab.includes(f))

export default defineConfig({
  test: {
    disableConsoleIntercept: true,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    maxWorkers: availableParallelism(), // vitest's default leaves a core idle: on two cores, one file at a time
    projects: [
      {extends: true, test: {name: 'unit', include: unit, sequence: {groupOrder: 0}}},
      {extends: true, test: {name: 'lab', include: lab, fileParallelism: false, sequence: {groupOrder: 1}}},
    ],
  },
})
