// The frames of an SSE body: { id, event, data } for each blank-line-ended block.
async function* frames(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame = { id: null, event: "message", data: "" };
      for (const line of block.split("\n")) {
        const [field, ...rest] = line.split(": ");
        const value = rest.join(": ");
        if (field === "id") frame.id = value;
        else if (field === "event") frame.event = value;
        else if (field === "data") frame.data += value;
      }
      yield frame;
    }
  }
}

// Starts a run and follows it to its end, resuming after the last frame
// seen whenever the connection drops (lce serve --sse-ids).
export async function follow(base, request, onFrame, { attempts = 5 } = {}) {
  let response = await fetch(`${base}/api/v1/chat/stream/start`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(request),
  });
  if (!response.ok) throw new Error(`start: ${response.status}`);
  const runId = response.headers.get("X-Run-Id");
  const token = response.headers.get("X-Run-Token");
  const protocol = request.protocol ?? "custom";
  let lastId = null;
  for (let attempt = 0; ; attempt++) {
    try {
      for await (const frame of frames(response.body)) {
        if (frame.id) lastId = frame.id;
        onFrame(frame);
      }
      return; // the stream ended with the run
    } catch (dropped) {
      if (attempt + 1 >= attempts) throw dropped;
    }
    const headers = { "X-Run-Token": token };
    if (lastId) headers["Last-Event-ID"] = lastId;
    response = await fetch(
      `${base}/api/v1/runs/${runId}/stream?protocol=${protocol}`,
      { headers },
    );
    if (!response.ok) throw new Error(`resume: ${response.status}`); // 404: the run is gone
  }
}
