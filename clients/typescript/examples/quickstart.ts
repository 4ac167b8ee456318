// Run against a server: OMNIMEM_URL=http://127.0.0.1:8420 OMNIMEM_API_KEY=omk_... node dist/examples/quickstart.js
import { AuthError, OmnimemClient } from "omnimem";

const memory = new OmnimemClient({ url: process.env.OMNIMEM_URL ?? "http://127.0.0.1:8420",
                                   apiKey: process.env.OMNIMEM_API_KEY });

const added = await memory.add("Ann moved to Lisbon in March", { user_id: "ann", speaker: "ann" });
const context = await memory.search("where does Ann live", { user_id: "ann", budget: 500 });
for (const hit of context.hits) console.log(hit.rank, hit.score.toFixed(2), hit.text);
console.log("forgot", await memory.forget({ user_id: "ann" }), "unit(s); the first was", added.id);

try {
  await new OmnimemClient({ url: memory.url, apiKey: "omk_wrong_key" }).search("anything");
} catch (error) {
  if (!(error instanceof AuthError)) throw error;
  console.log(`${error.code} (${error.status}): ${error.message}`);
}
