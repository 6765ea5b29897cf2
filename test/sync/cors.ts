/**
 * A page reaches a loopback sync server from another origin (happy-dom's, or a Vite dev
 * server's), so the tests' server answers CORS as a host mounting the handler for a web app
 * would (Hono's `cors()`): the handler itself does not (docs/SYNC.md "Background sync in the browser").
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
