/**
 * memflow's MCP tools as dsh tools (`mcp__memflow__<tool>`), registered when
 * memflow lists them — never awaited by dsh's start.
 *
 * dsh's own `@deepseek-ai/dsh-mcp-client` row awaits `initialize` and
 * `tools/list` before the first turn, with the MCP SDK's 60 s timeout and no
 * way to shorten it: a hung memflow cost every session start a minute. Here
 * the list is asked for in the background; the first prompt assembly waits
 * for it one hook budget at most (with the session start), and a list that
 * arrives later is registered for the steps after. memflow's MCP endpoint is
 * stateless (no handshake, no session id), so a tool call is one JSON-RPC
 * POST to `$MEMFLOW_URL/mcp/`, answered as JSON or as one SSE event.
 */

import { unreachableCode } from './client.js'

export const SERVER_NAME = 'memflow'
const PREFIX = `mcp__${SERVER_NAME}__`
// A list that takes longer than this is given up (and asked for again at the next session start).
const LIST_TIMEOUT_MS = 30_000

// The result shape dsh's MCP client declares: MCP content blocks, rendered as text.
const OUTPUT_SCHEMA = Object.freeze({
  type: 'object',
  properties: { content: { type: 'array', items: {} } },
  required: ['content'],
  additionalProperties: false,
})

function textOf(content) {
  return (Array.isArray(content) ? content : [])
    .filter(block => block?.type === 'text' && typeof block.text === 'string')
    .map(block => block.text)
    .join('\n')
}

export class McpTools {
  /**
   * @param {ReturnType<import('./client.js').resolveOptions>} options
   * @param {{ warn(...args: unknown[]): void }} log
   * @param {import('./client.js').MemflowClient} client its hook client, which says "unreachable" once
   */
  constructor(options, log, client) {
    this.options = options
    this.log = log
    this.client = client
    this.ids = 0
    /** @type {{ name: string, description: string, parameters: object }[] | undefined} */
    this.schemas = undefined
    this.listing = undefined
    this.nextTry = 0
    this.closed = new AbortController()
  }

  endpoint() {
    const { url, app, workspace } = this.options
    const query = new URLSearchParams({ app, ...(workspace ? { workspace } : {}) })
    return `${url}/mcp/?${query}`
  }

  /** One JSON-RPC request; its result, or a thrown Error saying what went wrong. */
  async rpc(method, params, { timeoutMs, signal }) {
    const id = ++this.ids
    const signals = [AbortSignal.timeout(timeoutMs), this.closed.signal, ...(signal ? [signal] : [])]
    const response = await fetch(this.endpoint(), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${this.options.apiKey}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      signal: AbortSignal.any(signals),
    })
    const text = await response.text()
    if (!response.ok) throw new Error(`memflow's MCP endpoint answered ${response.status}: ${text.slice(0, 200)}`)
    const messages = (response.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text.split(/\r?\n/).filter(line => line.startsWith('data:')).map(line => JSON.parse(line.slice(5)))
      : [JSON.parse(text)]
    const message = messages.find(m => m?.id === id)
    if (message === undefined) throw new Error(`memflow's MCP endpoint sent no answer to ${method}`)
    if (message.error) throw new Error(`memflow's MCP endpoint: ${message.error.message ?? 'error'}`)
    return message.result
  }

  /**
   * Ask for the tool list unless it is here or on its way; register the tools
   * on `tools` when it arrives. Resolves when this attempt settles.
   */
  ensure(tools) {
    if (!this.options.mcp || this.schemas !== undefined) return Promise.resolve()
    if (this.listing !== undefined) return this.listing
    if (Date.now() < this.nextTry) return Promise.resolve()
    this.listing = this.list()
      .then((listed) => {
        this.schemas = listed.map(tool => ({
          name: `${PREFIX}${tool.name}`,
          description: tool.description ?? '',
          parameters: tool.inputSchema ?? { type: 'object', properties: {} },
        }))
        for (const [index, tool] of listed.entries()) tools.register(this.definition(tool, this.schemas[index]))
      })
      .catch((error) => {
        if (this.closed.signal.aborted) return
        this.nextTry = Date.now() + this.options.skipMs
        if (unreachableCode(error) !== undefined) {
          this.client.failed(error, 'tools/list', false) // said once, with the hooks
          return
        }
        const why = error?.name === 'TimeoutError' ? `no list within ${LIST_TIMEOUT_MS / 1000} s` : String(error?.message ?? error)
        this.log.warn('memflow: its MCP tools are not registered yet (%s); asked again at a later session start', why)
      })
      .finally(() => { this.listing = undefined })
    return this.listing
  }

  async list() {
    const listed = []
    let cursor
    do {
      const result = await this.rpc('tools/list', cursor ? { cursor } : {}, { timeoutMs: LIST_TIMEOUT_MS })
      listed.push(...(result?.tools ?? []))
      cursor = result?.nextCursor
    } while (cursor)
    return listed
  }

  definition(tool, schema) {
    return {
      ...schema,
      output: {
        schema: OUTPUT_SCHEMA,
        render: (_args, value) => [{ type: 'text', text: textOf(value?.content) || `(${schema.name} returned no text)` }],
      },
      execute: async (args, exec) => {
        const result = await this.rpc('tools/call', {
          name: tool.name,
          arguments: args !== null && typeof args === 'object' ? args : {},
        }, { timeoutMs: this.options.toolCallTimeoutMs, signal: exec?.signal })
        const content = Array.isArray(result?.content) ? result.content : []
        // The model sees an error result (dsh turns a throw into one).
        if (result?.isError === true) throw new Error(textOf(content) || 'memflow answered an error')
        return { content }
      },
    }
  }

  /** Tool schemas registered after `assembly.tools` was collected, added to it (sorted as dsh does). */
  addMissing(assembly) {
    if (this.schemas === undefined || !Array.isArray(assembly.tools)) return assembly
    const present = new Set(assembly.tools.map(tool => tool.name))
    const missing = this.schemas.filter(schema => !present.has(schema.name))
    if (missing.length === 0) return assembly
    const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    // Sorted by name, as dsh sorts them, unless a configured toolOrder put them otherwise.
    const sorted = assembly.tools.every((tool, i) => i === 0 || byName(assembly.tools[i - 1], tool) <= 0)
    const tools = [...assembly.tools, ...missing.map(schema => structuredClone(schema))]
    return { ...assembly, tools: sorted ? tools.sort(byName) : tools }
  }

  close() {
    this.closed.abort()
  }
}
