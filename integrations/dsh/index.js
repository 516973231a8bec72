/**
 * memflow for DeepSeek Harness (dsh): a plugin row on the harness's own
 * extension points, calling memflow's REST API.
 *
 * - `agent/session-start`: the directory's declaration (resolved on this
 *   machine) and `session-start`, whose answer holds the session-constant
 *   blocks: the recall protocol, the frozen USER and MEMORY core, the
 *   preload, a restore pack or the handoff notes after a compaction.
 * - `systemPrompt.section`: the declared identity files, read again at every
 *   assembly (an edit to AGENT.md reaches the next step), then the frozen
 *   core; `systemPrompt.context`: the per-turn blocks (lessons, recall,
 *   index, scratchpad) and the session's restore pack / handoff notes.
 * - `agent/pre-step`: `user-prompt` for a step that enters typed input, and
 *   the preload as the session's first user message, once.
 * - `tools/post-execute`: `post-tool-use`; a large result is replaced by
 *   memflow's projection, the original kept byte for byte behind its hash.
 * - `session/event`: `turn/end` → `stop`; `compaction/start` → `pre-compact`,
 *   and at `compaction/end` `session-start` again (source `compact`), whose
 *   answer holds the handoff notes that stand in for the removed history.
 *
 * No `@deepseek-ai` import (see package.json): a profile plugin that carries
 * a copy of a harness package shadows the host's and splits its symbols.
 * Nothing is written to stdout, which belongs to the harness's protocols.
 */

import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import { MemflowClient, resolveOptions } from './lib/client.js'
import { resolveDeclaration, sectionText } from './lib/declaration.js'

export const name = 'memflow'
export const inject = ['systemPrompt']

// Session-constant blocks that become system-prompt sections (the others are context).
const CONSTANT_SECTIONS = [
  ['memflow:protocol', 40],
  ['memflow:core-user', 50],
  ['memflow:core-memory', 51],
]
const PRELOAD = 'context:preload'

export function apply(ctx, config = {}) {
  const options = resolveOptions(config)
  // Diagnostics go to the harness's logger, never stdout (console.warn is stderr).
  const log = typeof ctx.logger?.warn === 'function' ? ctx.logger : { warn: console.warn }
  const client = new MemflowClient(options, log)
  /** @type {Map<string, SessionState>} */
  const sessions = new Map()
  const said = new Set()

  const sayOnce = (text) => {
    if (said.has(text)) return
    said.add(text)
    log.warn('memflow: %s', text)
  }

  const stateFor = (agent, source = 'startup') => {
    let state = sessions.get(agent.id)
    if (state === undefined) {
      state = new SessionState(agent)
      sessions.set(agent.id, state)
      state.started = startSession(state, source)
    }
    return state
  }

  const basePayload = (state) => ({
    session_id: state.id,
    cwd: state.cwd,
    project_root: projectRoot(state.cwd),
    hostname: hostname(),
    delegation_depth: state.depth,
    ...dshContextEnv(),
  })

  const resolveLocal = async (state) => {
    if (!options.declarations) return
    const found = await resolveDeclaration({
      command: options.memflowCommand,
      cwd: state.cwd,
      delegationDepth: state.depth,
      timeoutMs: options.resolverTimeoutMs,
    })
    if (found.error) sayOnce(`the declaration was not resolved: ${found.error}`)
    for (const warning of [...(found.warnings ?? []), ...(found.assembly?.warnings ?? [])]) sayOnce(warning)
    state.assembly = found.assembly
  }

  /**
   * `session-start`: at the start, and again after a compaction (`source:
   * 'compact'`), when its answer carries the handoff notes for what went.
   */
  async function startSession(state, source) {
    if (source !== 'compact') await resolveLocal(state)
    const answer = await client.hook('session-start', {
      ...basePayload(state),
      source,
      ...(state.assembly ? { context: state.assembly } : {}),
    })
    if (answer === undefined) return
    reportNotes(answer)
    const rest = []
    const identity = []
    for (const block of answer.blocks ?? []) {
      if (CONSTANT_SECTIONS.some(([name]) => name === block.name)) state.constant.set(block.name, block.text)
      else if (block.name === PRELOAD) state.preload ??= block.text
      else if (block.name.startsWith('context:')) identity.push(block)
      else rest.push(block)
    }
    if (identity.length > 0) state.serverIdentity = identity
    state.sessionBlocks = rest
  }

  const reportNotes = (answer) => {
    // Declaration problems (`path:line: …`, `context: …`), not the server's bookkeeping.
    for (const note of answer.notes ?? []) if (typeof note === 'string' && /:\d+: |^context: /.test(note)) sayOnce(note)
  }

  // --- what the model sees --------------------------------------------------------------

  const identityOf = (context) => {
    const state = context?.agent ? sessions.get(context.agent.id) : undefined
    if (state === undefined) return { identity: [], params: undefined, state }
    if (state.assembly) {
      const sections = state.assembly.sections ?? []
      return {
        identity: sections.filter(s => s.kind === 'identity'),
        params: sections.find(s => s.kind === 'params'),
        state,
      }
    }
    return { identity: state.serverIdentity, params: undefined, state }
  }

  for (let slot = 0; slot < options.maxSections; slot++) {
    ctx.systemPrompt.section({
      name: `memflow:identity:${slot}`,
      order: options.sectionOrderBase + slot,
      text: (context) => {
        const section = identityOf(context).identity[slot]
        return section ? literal(sectionText(section)) : ''
      },
    })
  }
  ctx.systemPrompt.section({
    name: 'memflow:params',
    order: options.sectionOrderBase + options.maxSections,
    text: (context) => literal(identityOf(context).params?.text ?? ''),
  })
  for (const [sectionName, order] of CONSTANT_SECTIONS) {
    ctx.systemPrompt.section({
      name: sectionName,
      order,
      text: (context) => literal(identityOf(context).state?.constant.get(sectionName) ?? ''),
    })
  }
  ctx.systemPrompt.context({
    name: 'memflow:context',
    order: options.contextOrder,
    text: (context) => {
      const state = identityOf(context).state
      if (state === undefined) return ''
      return [...state.sessionBlocks, ...state.turnBlocks]
        .filter(block => block.text)
        .sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : 1))
        .map(block => block.text)
        .join('\n\n')
    },
  })

  // --- the harness's extension points -----------------------------------------------------

  ctx.on('agent/session-start', ({ agent, source }) => {
    stateFor(agent, source ?? 'startup')
  })

  ctx.on('agent/pre-step', async ({ agent, messages, signal }, next) => {
    const decision = await next()
    if (decision.kind !== 'enter' || decision.messages.length === 0) return decision
    const state = stateFor(agent)
    // The session's start has a head start; a step waits for it one budget at most.
    await within(state.started, options.timeoutMs)
    const claimed = decision.messages.filter(message => messages.includes(message))
    const prompt = claimed.map(textOf).filter(Boolean).join('\n\n')
    if (prompt) {
      const answer = await client.hook('user-prompt', {
        ...basePayload(state),
        prompt,
        source: { kind: claimed[0].source?.kind ?? 'user' },
      }, signal)
      if (answer !== undefined) {
        reportNotes(answer)
        state.turnBlocks = (answer.blocks ?? []).filter(block => !block.name.startsWith('context:')
          && !CONSTANT_SECTIONS.some(([name]) => name === block.name))
      }
      // A declaration edited mid-session reaches the turns after this one.
      if (state.assembly) void resolveLocal(state)
    }
    if (state.preload && !state.preloadGiven) {
      state.preloadGiven = true
      return { kind: 'enter', messages: [preloadMessage(state.preload), ...decision.messages] }
    }
    return decision
  })

  ctx.on('tools/post-execute', async (exec, result, next) => {
    const downstream = await next()
    if (!options.projection || downstream.kind !== 'accept') return downstream
    if (downstream.content !== undefined || downstream.value !== undefined) return downstream
    if (exec.agent === undefined || exec.name.startsWith('mcp__memflow__')) return downstream
    // Only all-text results: replacing one would drop an image block.
    const blocks = result.content ?? []
    if (blocks.length === 0 || blocks.some(block => block.type !== 'text')) return downstream
    const original = blocks.map(block => block.text).join('')
    const state = stateFor(exec.agent)
    const answer = await client.hook('post-tool-use', {
      ...basePayload(state),
      tool_name: exec.name,
      tool_input: exec.arguments ?? {},
      tool_use_id: exec.callId,
      tool_response: original,
      is_error: result.isError === true,
    }, exec.signal)
    const projected = answer?.tool_result?.text
    if (typeof projected !== 'string' || projected === original) return downstream
    return {
      kind: 'accept',
      content: [{ type: 'text', text: projected }],
      ...(downstream.additionalContexts ? { additionalContexts: downstream.additionalContexts } : {}),
    }
  })

  ctx.on('session/event', (session, event) => {
    const state = sessions.get(session.id ?? session.header?.id)
    if (state === undefined) return
    if (event.type === 'turn/end') {
      void client.hook('stop', {
        ...basePayload(state),
        turn: event.data?.turn,
        reason: event.data?.reason?.kind,
      })
    } else if (event.type === 'compaction/start') {
      // memflow folds what is left of the history into a handoff note.
      state.compacting = client.hook('pre-compact', { ...basePayload(state), trigger: 'auto' })
    } else if (event.type === 'compaction/end') {
      // The notes stand in for the history the compaction removed (as Claude
      // Code's SessionStart with source "compact" does).
      const folded = state.compacting ?? Promise.resolve()
      state.compacting = undefined
      state.started = folded.then(() => startSession(state, 'compact'))
    }
  })

  ctx.on('session/disposed', (session) => {
    const state = sessions.get(session.id ?? session.header?.id)
    if (state === undefined) return
    sessions.delete(state.id)
    void client.hook('session-end', { ...basePayload(state), reason: 'disposed' })
  })
}

class SessionState {
  constructor(agent) {
    const header = agent.session?.header ?? {}
    this.id = String(agent.id)
    this.cwd = header.cwd ?? process.cwd()
    this.depth = Number.isInteger(header.delegationDepth) ? header.delegationDepth : 0
    this.started = Promise.resolve()
    this.assembly = undefined
    this.serverIdentity = []
    this.constant = new Map()
    this.preload = undefined
    this.preloadGiven = false
    this.sessionBlocks = []
    this.turnBlocks = []
    this.compacting = undefined
  }
}

function textOf(message) {
  return (message.content ?? [])
    .filter(block => block.type === 'text' && typeof block.text === 'string')
    .map(block => block.text)
    .join('\n')
}

/**
 * Section text shown as written. dsh interpolates `{{name}}` in sections and
 * fails the whole assembly on an unknown one, with no escape: a `{{` in
 * AGENT.md or a core fact must not stop the agent. (File contents are never
 * substituted, as the MEMFLOW design says.)
 */
function literal(text) {
  return text.replaceAll('{{', '{\u200b{')
}

function preloadMessage(text) {
  return Object.freeze({
    id: crypto.randomUUID(),
    role: 'user',
    content: Object.freeze([Object.freeze({ type: 'text', text })]),
    source: Object.freeze({ kind: 'plugin', plugin: 'memflow' }),
  })
}

/** The nearest ancestor holding `.git`, else the directory itself (as `memflow hook`). */
function projectRoot(cwd) {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return cwd
  }
}

function dshContextEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('DSH_CONTEXT_')))
  return Object.keys(env).length > 0 ? { env } : {}
}

/** `promise`, or nothing once `ms` have passed (it goes on in the background). */
function within(promise, ms) {
  let timer
  const timeout = new Promise(resolve => { timer = setTimeout(resolve, ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
