// Runs the effects the reducer asks for through the injected actions and turns their results
// (or failures) back into events. No Ink here either: testable with fake actions.
import type {ChalkInstance} from 'chalk'

import {renderExplain} from '../render/text.js'
import type {UiActions} from './actions.js'
import type {Effect, UiEvent} from './state.js'

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

export async function runEffect(
  effect: Effect,
  actions: UiActions,
  c: ChalkInstance,
  dispatch: (e: UiEvent) => void,
  exit: () => void,
): Promise<void> {
  const pane = async (seq: number, produce: () => Promise<string>) => {
    try {
      dispatch({type: 'pane-result', seq, ok: true, text: await produce()})
    } catch (error) {
      dispatch({type: 'pane-result', seq, ok: false, text: `failed: ${message(error)}`})
    }
  }
  switch (effect.type) {
    case 'exit': exit(); return
    case 'load':
      try {
        const started = Date.now()
        const report = await actions.loadReport(effect.freshTruth)
        dispatch({type: 'loaded', report, at: new Date().toISOString(), tookMs: Date.now() - started})
      } catch (error) {
        dispatch({type: 'load-failed', error: message(error)})
      }
      return
    // the TUI's header shows the node; evidence is shown once, where the chain first cites it
    case 'explain': {
      const opts = {node: false, evidenceOnce: true}
      return pane(effect.seq, async () => renderExplain(await actions.explain(effect.prefix), c, opts))
    }
    case 'preview-fix': return pane(effect.seq, () => actions.previewFix!(effect.prefix))
    case 'apply-fix': return pane(effect.seq, () => actions.applyFix!(effect.prefix))
    case 'write-bundle': return pane(effect.seq, () => actions.writeBundle!())
  }
}
