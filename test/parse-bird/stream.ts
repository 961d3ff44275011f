// The BIRD route parser fed a line at a time (birdc or control-socket framing), as a stream would feed it: an
// oracle for parseBirdRoutes, which reads a whole text in place.
import {BirdFramer} from '../../src/parse/bird-framing.js'
import {BirdRouteParser} from '../../src/parse/bird-routes.js'
import type {BirdRoute} from '../../src/model/types.js'

export function createBirdRouteStream(
  file: string,
  onRoute: (route: BirdRoute) => void,
): {push(raw: string, lineNo: number): void; end(): void} {
  const parser = new BirdRouteParser(file, onRoute)
  const framer = new BirdFramer(file, (t, l, c) => parser.feed(t, l, c))
  return {
    push: (raw, lineNo) => framer.push(raw, lineNo),
    end: () => {
      parser.end()
    },
  }
}
