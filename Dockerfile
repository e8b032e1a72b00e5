# syntax=docker/dockerfile:1
# Build a wheel in one stage, install it into a slim runtime in the next.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY coscheduler ./coscheduler
RUN pip install --no-cache-dir build==1.2.2.post1 \
 && python -m build --wheel --outdir /dist

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /dist/*.whl /tmp/
RUN pip install --no-cache-dir /tmp/*.whl \
 && rm /tmp/*.whl \
 && groupadd --gid 65532 coscheduler \
 && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin coscheduler
USER 65532:65532
EXPOSE 10251
ENTRYPOINT ["coscheduler"]
CMD ["run"]
