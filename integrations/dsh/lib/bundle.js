/**
 * The bundle's work, one method per extension point (index.js wires them).
 * See index.js for what each point is used for.
 */

import { hostname } from 'node:os'
import { MemflowClient } from './client.js'
import { resolveDeclaration, sectionText } from './declaration.js'
import { SessionState, dshContextEnv, literal, preloadMessage, projectRoot, textOf, within } from './session.js'

// Session-constant blocks that become system-prompt sections (the others are context).
const CONSTANT_SECTIONS = new Map([
  ['memflow:protocol', 40],
  ['memflow:core-user', 50],
  ['memflow:core-memory', 51],
])
const PRELOAD = 'context:preload'

export class Bundle {
  constructor(options, log) {
    this.options = options
    this.log = log
    this.client = new MemflowClient(options, log)
    /** @type {Map<string, SessionState>} */
    this.sessions = new Map()
    this.said = new Set()
  }

  sayOnce(text) {
    if (this.said.has(text)) return
    this.said.add(text)
    this.log.warn('memflow: %s', text)
  }

  stateFor(agent, source = 'startup') {
    let state = this.sessions.get(agent.id)
    if (state === undefined) {
      state = new SessionState(agent)
      this.sessions.set(agent.id, state)
      state.started = this.startSession(state, source)
    }
    return state
  }

  basePayload(state) {
    return {
      session_id: state.id,
      cwd: state.cwd,
      project_root: projectRoot(state.cwd),
      hostname: hostname(),
      delegation_depth: state.depth,
      ...dshContextEnv(),
    }
  }

  async resolveLocal(state) {
    if (!this.options.declarations) return
    const found = await resolveDeclaration({
      command: this.options.memflowCommand,
      cwd: state.cwd,
      delegationDepth: state.depth,
      timeoutMs: this.options.resolverTimeoutMs,
    })
    if (found.error) this.sayOnce(`the declaration was not resolved: ${found.error}`)
    for (const warning of [...(found.warnings ?? []), ...(found.assembly?.warnings ?? [])]) this.sayOnce(warning)
    state.assembly = found.assembly
  }

  /**
   * `session-start`: at the start, and again after a compaction (`source:
   * 'compact'`), when its answer carries the handoff notes for what went.
   */
  async startSession(state, source) {
    if (source !== 'compact') await this.resolveLocal(state)
    const answer = await this.client.hook('session-start', {
      ...this.basePayload(state),
      source,
      ...(state.assembly ? { context: state.assembly } : {}),
    })
    if (answer === undefined) return
    this.reportNotes(answer)
    const rest = []
    const identity = []
    for (const block of answer.blocks ?? []) {
      if (CONSTANT_SECTIONS.has(block.name)) state.constant.set(block.name, block.text)
      else if (block.name === PRELOAD) state.preload ??= block.text
      else if (block.name.startsWith('context:')) identity.push(block)
      else rest.push(block)
    }
    if (identity.length > 0) state.serverIdentity = identity
    state.sessionBlocks = rest
  }

  reportNotes(answer) {
    // Declaration problems (`path:line: …`, `context: …`), not the server's bookkeeping.
    for (const note of answer.notes ?? []) {
      if (typeof note === 'string' && /:\d+: |^context: /.test(note)) this.sayOnce(note)
    }
  }

  // --- what the model sees --------------------------------------------------------------

  identityOf(context) {
    const state = context?.agent ? this.sessions.get(context.agent.id) : undefined
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

  /** Fixed slots (dsh registers sections once); an empty one renders as nothing. */
  registerPrompt(systemPrompt) {
    const { maxSections, sectionOrderBase, contextOrder } = this.options
    for (let slot = 0; slot < maxSections; slot++) {
      systemPrompt.section({
        name: `memflow:identity:${slot}`,
        order: sectionOrderBase + slot,
        text: (context) => {
          const section = this.identityOf(context).identity[slot]
          return section ? literal(sectionText(section)) : ''
        },
      })
    }
    systemPrompt.section({
      name: 'memflow:params',
      order: sectionOrderBase + maxSections,
      text: (context) => literal(this.identityOf(context).params?.text ?? ''),
    })
    for (const [sectionName, order] of CONSTANT_SECTIONS) {
      systemPrompt.section({
        name: sectionName,
        order,
        text: (context) => literal(this.identityOf(context).state?.constant.get(sectionName) ?? ''),
      })
    }
    systemPrompt.context({
      name: 'memflow:context',
      order: contextOrder,
      text: (context) => {
        const state = this.identityOf(context).state
        if (state === undefined) return ''
        return [...state.sessionBlocks, ...state.turnBlocks]
          .filter(block => block.text)
          .sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : 1))
          .map(block => block.text)
          .join('\n\n')
      },
    })
  }

  // --- the harness's extension points -----------------------------------------------------

  async preStep({ agent, messages, signal }, next) {
    const decision = await next()
    if (decision.kind !== 'enter' || decision.messages.length === 0) return decision
    const state = this.stateFor(agent)
    // The session's start has a head start; a step waits for it one budget at most.
    await within(state.started, this.options.timeoutMs)
    const claimed = decision.messages.filter(message => messages.includes(message))
    const prompt = claimed.map(textOf).filter(Boolean).join('\n\n')
    if (prompt) {
      const answer = await this.client.hook('user-prompt', {
        ...this.basePayload(state),
        prompt,
        source: { kind: claimed[0].source?.kind ?? 'user' },
      }, signal)
      if (answer !== undefined) {
        this.reportNotes(answer)
        state.turnBlocks = (answer.blocks ?? [])
          .filter(block => !block.name.startsWith('context:') && !CONSTANT_SECTIONS.has(block.name))
      }
      // A declaration edited mid-session reaches the turns after this one.
      if (state.assembly) void this.resolveLocal(state)
    }
    if (state.preload && !state.preloadGiven) {
      state.preloadGiven = true
      return { kind: 'enter', messages: [preloadMessage(state.preload), ...decision.messages] }
    }
    return decision
  }

  async postExecute(exec, result, next) {
    const downstream = await next()
    if (!this.options.projection || downstream.kind !== 'accept') return downstream
    if (downstream.content !== undefined || downstream.value !== undefined) return downstream
    if (exec.agent === undefined || exec.name.startsWith('mcp__memflow__')) return downstream
    // Only all-text results: replacing one would drop an image block.
    const blocks = result.content ?? []
    if (blocks.length === 0 || blocks.some(block => block.type !== 'text')) return downstream
    const original = blocks.map(block => block.text).join('')
    const state = this.stateFor(exec.agent)
    const answer = await this.client.hook('post-tool-use', {
      ...this.basePayload(state),
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
  }

  sessionEvent(session, event) {
    const state = this.sessions.get(session.id ?? session.header?.id)
    if (state === undefined) return
    if (event.type === 'turn/end') {
      void this.client.hook('stop', {
        ...this.basePayload(state),
        turn: event.data?.turn,
        reason: event.data?.reason?.kind,
      })
    } else if (event.type === 'compaction/start') {
      // memflow folds what is left of the history into a handoff note.
      state.compacting = this.client.hook('pre-compact', { ...this.basePayload(state), trigger: 'auto' })
    } else if (event.type === 'compaction/end') {
      // The notes stand in for the history the compaction removed (as Claude
      // Code's SessionStart with source "compact" does).
      const folded = state.compacting ?? Promise.resolve()
      state.compacting = undefined
      state.started = folded.then(() => this.startSession(state, 'compact'))
    }
  }

  sessionDisposed(session) {
    const state = this.sessions.get(session.id ?? session.header?.id)
    if (state === undefined) return
    this.sessions.delete(state.id)
    void this.client.hook('session-end', { ...this.basePayload(state), reason: 'disposed' })
  }
}
