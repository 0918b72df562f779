.PHONY: test demo bench lint
test:
	./scripts/test.sh
demo:
	./scripts/demo.sh
bench:
	./scripts/bench.sh
lint:
	.venv/bin/ruff check bot tests bench && .venv/bin/mypy
