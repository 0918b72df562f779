"""Tests of the deployment artefacts: Kustomize manifests, RBAC, container image, security scan."""
