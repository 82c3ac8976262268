// Precompiled header: the heavy, stable includes shared by every translation unit.
#pragma once
#include <torch/torch.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
