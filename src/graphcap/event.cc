#include <graphcap/event.h>

#include <utility>

#include <graphcap/detail/event_state.h>

namespace graphcap {

Event::Event() noexcept = default;
Event::Event(std::shared_ptr<detail::EventState> state) noexcept : state_(std::move(state)) {}
Event::Event(Event&& other) noexcept = default;
Event& Event::operator=(Event&& other) noexcept = default;
Event::~Event() = default;

CUevent Event::native_handle() const noexcept {
  return state_ == nullptr ? nullptr : state_->handle();
}

}  // namespace graphcap
