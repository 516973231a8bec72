/**
 * memflow for DeepSeek Harness (dsh): a plugin row on the harness's own
 * extension points, calling memflow's REST API and its MCP tools.
 *
 * - `agent/session-start`: the directory's declaration (resolved on this
 *   machine) and `session-start`, whose answer holds the session-constant
 *   blocks: the recall protocol, the frozen USER and MEMORY core, the
 *   preload, a restore pack or the handoff notes after a compaction.
 * - `agent/inbox/claimed`: a typed prompt entering a step starts its
 *   `user-prompt` call (recall, lessons, index, scratchpad) at once.
 * - `system-prompt/assemble`: dsh assembles the system prompt and the
 *   runtime context *before* `agent/pre-step`; this awaited waterfall waits
 *   for the session start and the prompt's recall (one hook budget at most)
 *   and renders memflow's sections again, so the request a prompt produces
 *   carries them. The sections: the declared identity files, read again at
 *   every assembly (an edit to AGENT.md reaches the next step), the frozen
 *   core; the context: the per-turn blocks and the session's restore pack /
 *   handoff notes.
 * - `agent/pre-step`: the preload as the session's first user message, once.
 * - `tools/post-execute`: `post-tool-use`; a large result is replaced by
 *   memflow's projection, the original — the whole output, read from the log
 *   file dsh names when it cut it — kept byte for byte behind its hash.
 * - `session/event`: `turn/end` → `stop`; `compaction/start` → `pre-compact`,
 *   and at `compaction/end` `session-start` again (source `compact`), whose
 *   answer holds the handoff notes that stand in for the removed history.
 * - `ctx.tools`: memflow's MCP tools as `mcp__memflow__<tool>`, listed in
 *   the background and registered when they arrive (dsh never waits for a
 *   hung server's MCP handshake).
 * - disposal (dsh exits): `session-end` for every open session, and the
 *   calls still on their way get one budget to land.
 *
 * No `@deepseek-ai` import (see package.json): a profile plugin that carries
 * a copy of a harness package shadows the host's and splits its symbols.
 * Nothing is written to stdout, which belongs to the harness's protocols.
 */

import { format } from 'node:util'
import { Bundle } from './lib/bundle.js'
import { resolveOptions } from './lib/client.js'

export const name = 'memflow'
export const inject = ['systemPrompt', 'tools']

/**
 * Where the person sees what the bundle says (each thing once): dsh's logger
 * (the web and terminal apps show it); a headless run keeps its logger to
 * itself and prints its own errors on stderr, so there the line goes to
 * stderr too. Never stdout, which carries the run's answer.
 */
function userLog(ctx) {
  const logger = typeof ctx.logger?.warn === 'function' ? ctx.logger : undefined
  return {
    warn(...args) {
      logger?.warn(...args)
      if (logger === undefined || ctx.get?.('headlessStartup') !== undefined) process.stderr.write(`${format(...args)}\n`)
    },
  }
}

export function apply(ctx, config = {}) {
  const log = userLog(ctx)
  const bundle = new Bundle(resolveOptions(config), log)
  bundle.registerPrompt(ctx.systemPrompt)
  ctx.on('agent/session-start', ({ agent, source }) => { bundle.stateFor(agent, source ?? 'startup') })
  ctx.on('agent/inbox/claimed', payload => bundle.claimed(payload))
  ctx.on('system-prompt/assemble', (assembly, context, next) => bundle.timed('system-prompt/assemble', bundle.assemble(assembly, context, next)))
  ctx.on('agent/pre-step', (payload, next) => bundle.timed('agent/pre-step', bundle.preStep(payload, next)))
  ctx.on('tools/post-execute', (exec, result, next) => bundle.timed('tools/post-execute', bundle.postExecute(exec, result, next)))
  ctx.on('session/event', (session, event) => bundle.sessionEvent(session, event))
  ctx.on('session/disposed', session => bundle.sessionDisposed(session))
  ctx.effect(() => () => bundle.timed('dispose', bundle.dispose()), 'memflow.sessions')
  bundle.useTools(ctx.tools)
}
