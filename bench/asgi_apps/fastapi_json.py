"""The FastAPI app of bench/run's asgi workload: one JSON endpoint, as a
FastAPI user writes it (a path operation returning a dict, validated query
parameter, FastAPI's default JSONResponse)."""
from fastapi import FastAPI

app = FastAPI()


@app.get("/")
async def root(name: str = "world"):
    return {"message": "Hello %s!" % name, "items": [1, 2, 3]}
