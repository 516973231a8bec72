/**
 * The bundle's work, one method per extension point (index.js wires them).
 * See index.js for what each point is used for.
 *
 * dsh's step order (the agent loop's `preStep`, rc.8 and 0.1.1-rc.2 alike):
 * the inbox claims the step's messages (`agent/inbox/claimed`), the system
 * prompt and the runtime context are assembled (`system-prompt/assemble`,
 * an awaited waterfall), and only then `agent/pre-step` runs. So what the
 * model must have in the request a prompt produces — identity, protocol,
 * core, the recall for that prompt — is fetched from the claim on and
 * awaited inside the assembly waterfall, one hook budget at most.
 */

import { appendFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { MemflowClient } from './client.js'
import { resolveDeclaration, sectionText } from './declaration.js'
import { McpTools } from './mcp.js'
import { wholeOutput } from './output.js'
import { SessionState, dshContextEnv, literal, preloadMessage, projectRoot, textOf, within } from './session.js'

// Session-constant blocks that become system-prompt sections (the others are context).
const CONSTANT_SECTIONS = new Map([
  ['memflow:protocol', 40],
  ['memflow:core-user', 50],
  ['memflow:core-memory', 51],
])
const PRELOAD = 'context:preload'
const CONTEXT = 'memflow:context'

export class Bundle {
  constructor(options, log) {
    this.options = options
    this.log = log
    this.client = new MemflowClient(options, log)
    this.mcp = new McpTools(options, log, this.client)
    this.tools = undefined
    this.toolsAwaited = false
    /** @type {Map<string, SessionState>} */
    this.sessions = new Map()
    /** name → (context) => text, for the sections and the context this bundle registers */
    this.providers = new Map()
    /** Hook calls nobody awaits (turn end, session end): waited for, a budget at most, at exit. */
    this.inflight = new Set()
    this.said = new Set()
  }

  sayOnce(text) {
    if (this.said.has(text)) return
    this.said.add(text)
    this.log.warn('memflow: %s', text)
  }

  /** `promise`, its span from now recorded under `point` when timings are asked for. */
  timed(point, promise) {
    const path = this.options.timingsPath
    if (!path) return promise
    const started = performance.now()
    const record = () => {
      try {
        appendFileSync(path, `${JSON.stringify({ point, ms: Math.round((performance.now() - started) * 10) / 10 })}\n`)
      } catch { /* measuring never breaks a step */ }
    }
    promise.then(record, record)
    return promise
  }

  track(promise) {
    this.inflight.add(promise)
    promise.finally(() => this.inflight.delete(promise))
    return promise
  }

  /** The tool registry (`ctx.tools`); memflow's MCP tools are asked for now, registered when listed. */
  useTools(tools) {
    this.tools = tools
    if (tools !== undefined) void this.mcp.ensure(tools)
  }

  stateFor(agent, source = 'startup') {
    let state = this.sessions.get(agent.id)
    if (state === undefined) {
      state = new SessionState(agent)
      this.sessions.set(agent.id, state)
      state.started = this.timed('agent/session-start', this.startSession(state, source))
      // A list that failed before is asked for again, in the background.
      if (this.tools !== undefined) void this.mcp.ensure(this.tools)
    }
    return state
  }

  basePayload(state) {
    return {
      session_id: state.id,
      cwd: state.cwd,
      project_root: projectRoot(state.cwd),
      hostname: hostname(),
      ...(state.assembly?.device ? { device: state.assembly.device } : {}),
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
    const section = (name, order, text) => {
      this.providers.set(name, text)
      systemPrompt.section({ name, order, text })
    }
    for (let slot = 0; slot < maxSections; slot++) {
      section(`memflow:identity:${slot}`, sectionOrderBase + slot, (context) => {
        const found = this.identityOf(context).identity[slot]
        return found ? literal(sectionText(found)) : ''
      })
    }
    section('memflow:params', sectionOrderBase + maxSections,
      (context) => literal(this.identityOf(context).params?.text ?? ''))
    for (const [sectionName, order] of CONSTANT_SECTIONS) {
      section(sectionName, order,
        (context) => literal(this.identityOf(context).state?.constant.get(sectionName) ?? ''))
    }
    const contextText = (context) => {
      const state = this.identityOf(context).state
      if (state === undefined) return ''
      return literal([...state.sessionBlocks, ...state.turnBlocks]
        .filter(block => block.text)
        .sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : 1))
        .map(block => block.text)
        .join('\n\n'))
    }
    this.providers.set(CONTEXT, contextText)
    systemPrompt.context({ name: CONTEXT, order: contextOrder, text: contextText })
  }

  // --- the harness's extension points -----------------------------------------------------

  /**
   * `agent/inbox/claimed`: a message enters the coming step. A typed prompt
   * starts its `user-prompt` call now, before dsh assembles the request.
   */
  claimed({ agent, message }) {
    if (agent === undefined || message?.role !== 'user') return
    const kind = message.source?.kind ?? 'user'
    if (kind === 'plugin') return
    const text = textOf(message)
    if (!text) return
    const state = this.stateFor(agent)
    // Messages claimed for one step arrive together: one call for all of them.
    state.pendingPrompt.push({ text, kind })
    if (state.pendingPrompt.length > 1) return
    state.prompting = state.started.then(() => new Promise(resolve => queueMicrotask(resolve)))
      .then(() => this.userPrompt(state))
  }

  async userPrompt(state) {
    const claimed = state.pendingPrompt.splice(0)
    const answer = await this.client.hook('user-prompt', {
      ...this.basePayload(state),
      prompt: claimed.map(entry => entry.text).join('\n\n'),
      source: { kind: claimed[0].kind },
    })
    // No answer (memflow down or slow): the last turn's blocks stand, as
    // FlyMemory's plugin reuses its last working context when the server is down.
    if (answer !== undefined) {
      this.reportNotes(answer)
      state.turnBlocks = (answer.blocks ?? [])
        .filter(block => !block.name.startsWith('context:') && !CONSTANT_SECTIONS.has(block.name))
    }
    // A declaration edited mid-session reaches the turns after this one.
    if (state.assembly) void this.resolveLocal(state)
  }

  /**
   * `system-prompt/assemble`: dsh evaluates section providers before this
   * waterfall; here the session's start, the entered prompt's recall and
   * memflow's tool list are awaited (one budget at most past the start of the
   * wait) and memflow's sections and context are rendered again with them.
   */
  async assemble(assembly, context, next) {
    const assembled = await next()
    const agent = context?.agent
    if (agent === undefined) return assembled
    const state = this.stateFor(agent)
    const { timeoutMs, resolverTimeoutMs } = this.options
    // Resolving the declaration is local work (Python starting): its own limit.
    await within(state.started, resolverTimeoutMs + timeoutMs)
    const waits = [state.prompting ?? Promise.resolve()]
    // The tool list is waited for once: a hung server's list must not cost every step.
    if (this.tools !== undefined && !this.toolsAwaited) {
      this.toolsAwaited = true
      waits.push(this.mcp.ensure(this.tools))
    }
    await within(Promise.all(waits), timeoutMs)
    const render = (entry) => (this.providers.has(entry.name) ? { ...entry, text: this.providers.get(entry.name)(context) } : entry)
    return this.mcp.addMissing({
      ...assembled,
      sections: (assembled.sections ?? []).map(render),
      contexts: (assembled.contexts ?? []).map(render),
    })
  }

  async preStep({ agent }, next) {
    const decision = await next()
    if (decision.kind !== 'enter' || decision.messages.length === 0) return decision
    const state = this.stateFor(agent)
    if (state.preload && !state.preloadGiven) {
      state.preloadGiven = true
      return { ...decision, messages: [preloadMessage(state.preload), ...decision.messages] }
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
    const payload = {
      ...this.basePayload(state),
      tool_name: exec.name,
      tool_input: exec.arguments ?? {},
      tool_use_id: exec.callId,
      tool_response: original,
      is_error: result.isError === true,
    }
    const whole = wholeOutput(original, { cwd: state.cwd, cap: this.options.maxBytes })
    if (whole !== undefined) {
      payload.memflow_output = this.fitted(payload, whole)
      if (payload.memflow_output.refused) this.sayOnce(`only dsh's cut of that tool output is kept: ${payload.memflow_output.refused}`)
    }
    const answer = await this.client.hook('post-tool-use', payload, exec.signal)
    const projected = answer?.tool_result?.text
    if (typeof projected !== 'string' || projected === original) return downstream
    return {
      kind: 'accept',
      content: [{ type: 'text', text: projected }],
      ...(downstream.additionalContexts ? { additionalContexts: downstream.additionalContexts } : {}),
    }
  }

  /** The whole output, unless it would push the hook body past the server's cap (then the reason). */
  fitted(payload, whole) {
    if (whole.refused) return whole
    const size = Buffer.byteLength(JSON.stringify({ ...payload, memflow_output: whole }))
    if (size <= this.options.maxBytes) return whole
    return {
      source: whole.source,
      size: whole.size,
      refused: `the hook body would hold ${size.toLocaleString('en')} bytes with the whole output, over MEMFLOW_HOOK_MAX_BYTES (${this.options.maxBytes.toLocaleString('en')})`,
    }
  }

  sessionEvent(session, event) {
    const state = this.sessions.get(session.id ?? session.header?.id)
    if (state === undefined) return
    if (event.type === 'turn/end') {
      this.track(this.timed('session/event turn/end', this.client.hook('stop', {
        ...this.basePayload(state),
        turn: event.data?.turn,
        reason: event.data?.reason?.kind,
      })))
    } else if (event.type === 'compaction/start') {
      // memflow folds what is left of the history into a handoff note.
      state.compacting = this.track(this.client.hook('pre-compact', { ...this.basePayload(state), trigger: 'auto' }))
    } else if (event.type === 'compaction/end') {
      // The notes stand in for the history the compaction removed (as Claude
      // Code's SessionStart with source "compact" does).
      const folded = state.compacting ?? Promise.resolve()
      state.compacting = undefined
      state.started = folded.then(() => this.startSession(state, 'compact'))
    }
  }

  endSession(state, reason) {
    this.sessions.delete(state.id)
    return this.track(this.client.hook('session-end', { ...this.basePayload(state), reason }))
  }

  sessionDisposed(session) {
    const state = this.sessions.get(session.id ?? session.header?.id)
    if (state !== undefined) void this.endSession(state, 'disposed')
  }

  /**
   * The plugin is disposed (dsh exits, or the row is reloaded): every session
   * still open ends, and the calls on their way (turn end, session end) are
   * given one budget to land — a headless dsh exits right after its answer.
   */
  async dispose() {
    for (const state of [...this.sessions.values()]) void this.endSession(state, 'exit')
    this.mcp.close()
    await within(Promise.allSettled([...this.inflight]), this.options.timeoutMs)
  }
}
