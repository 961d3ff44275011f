// Runs inside a network namespace (`ip netns exec NS npx tsx test/netlink/driver.ts CMD`), because
// Node cannot setns: reads a JSON argument on stdin, prints one JSON result on stdout.
import {readFileSync} from 'node:fs'

import {execa} from 'execa'

import {applyPlan, plannedSpec, revertJournal} from '../../src/netlink/apply.js'
import {openRouteClient} from '../../src/netlink/client.js'
import {kernelRoutesFor} from '../../src/netlink/routes-for.js'

const cmd = process.argv[2]
const input = JSON.parse(readFileSync(0, 'utf8') || 'null')

async function main(): Promise<unknown> {
  switch (cmd) {
    case 'dump': {
      const c = await openRouteClient()
      try {
        const v4 = await c.dumpRoutes('inet')
        const v6 = await c.dumpRoutes('inet6')
        return {
          routes: [...v4.routes, ...v6.routes].map((d) => d.route),
          undecodable: [...v4.undecodable, ...v6.undecodable],
        }
      } finally {
        c.close()
      }
    }
    case 'routes-for': {
      // {prefixes, addresses}: what a targeted explanation keeps of one dump, and the whole IPv4 dump
      const c = await openRouteClient()
      try {
        return {kept: await kernelRoutesFor(c, input), all: (await c.dumpRoutes('inet')).routes.map((d) => d.route)}
      } finally {
        c.close()
      }
    }
    case 'write': {
      // {op: 'replace'|'add'|'delete', planned}
      const c = await openRouteClient()
      try {
        const links = await c.links()
        const byName = new Map([...links].map(([i, n]) => [n, i]))
        const spec = plannedSpec(input.planned, (d) => byName.get(d))
        try {
          if (input.op === 'add') await c.addRoute(spec)
          else if (input.op === 'delete') await c.deleteRoute(spec)
          else await c.replaceRoute(spec)
          return {ok: true}
        } catch (error) {
          const e = error as Error & {errnoName?: string; code?: string; route?: unknown}
          return {ok: false, name: e.name, errno: e.errnoName, code: e.code, message: e.message, route: e.route}
        }
      } finally {
        c.close()
      }
    }
    case 'apply': {
      // {items | plan (an overlay plan: items and rules), journalDir, watchSeconds, failAfter?, vanish?: {index, dev},
      // shareNexthops?,
      // ruleRace?: {index, rule: ['priority', …]} (another writer adds that rule just before the apply adds rule
      // `index`)}
      const {plan, vanish, shareNexthops, ruleRace, ...opts} = input
      const items = plan ? plan.items : input.items
      delete opts.items
      // shareNexthops: items with equal next hops share one frozen list, as the planner makes them (src/plan/plan.ts);
      // JSON on stdin gives each item a list of its own
      if (shareNexthops) {
        const lists = new Map<string, unknown>()
        for (const item of items) {
          const text = JSON.stringify(item.planned.nexthops)
          if (!lists.has(text))
            lists.set(text, Object.freeze(item.planned.nexthops.map((nh: object) => Object.freeze(nh))))
          item.planned.nexthops = lists.get(text)
        }
      }
      return applyPlan(plan ?? items, {
        ...opts,
        beforeWrite: vanish
          ? async (i: number) => {
              if (i === vanish.index) await execa('ip', ['link', 'del', 'dev', vanish.dev])
            }
          : undefined,
        beforeRuleWrite: ruleRace
          ? async (i: number) => {
              if (i === ruleRace.index) await execa('ip', ['rule', 'add', ...ruleRace.rule])
            }
          : undefined,
      })
    }
    case 'revert':
      return revertJournal(input.journal)
    default:
      throw new Error(`unknown driver command ${cmd}`)
  }
}

main().then(
  (r) => process.stdout.write(JSON.stringify(r) + '\n'),
  (error) => {
    process.stdout.write(JSON.stringify({thrown: {name: error.name, message: error.message, code: error.code}}) + '\n')
    process.exitCode = 3
  },
)
