"""Tests of the deployment artefacts: the Helm chart, the Kustomize targets that render it, RBAC,
the container image, the security scan."""
