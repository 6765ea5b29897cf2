/**
 * A page reaches a loopback sync server from another origin (happy-dom's, or a Vite dev
 * server's), so the tests' server answers CORS as a host's own middleware in front of the
 * handler would (Hono's `cors()`), to any origin; the handler's own list of origins
 * (`corsOrigins`, docs/SYNC.md "A server on another origin") is tested in cors-origins.test.ts.
 */
export function withCors(handler: (request: Request) => Promise<Response>): (request: Request) => Promise<Response> {
  const headers = { "access-control-allow-origin": "*", "access-control-allow-headers": "authorization, content-type", "access-control-allow-methods": "POST" };
  return async (request) => {
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers });
    const response = await handler(request);
    const answer = new Response(response.body, response);
    for (const [name, value] of Object.entries(headers)) answer.headers.set(name, value);
    return answer;
  };
}
